import CFuzzerDriver
import FuzzChecks

/// The entry point SwiftPM gives this executable; hands over to libFuzzer's driver.
@_cdecl("FuzzWebForm_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { start, count in
        guard let start else { return 0 }
        checkWebForm(Array(UnsafeBufferPointer(start: start, count: count)))
        return 0
    }
}
