import FuzzChecks

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNames(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    checkNames(Array(UnsafeBufferPointer(start: start, count: count)))
    return 0
}
