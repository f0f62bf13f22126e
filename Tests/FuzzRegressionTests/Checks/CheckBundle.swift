import ReceiptWire

// Feeds the input to WireBundleReader in pieces (the first byte picks the piece size, as a network
// read would split it) and checks what it reports: every blob's bytes add up to the length its header
// announced, events come in begin/bytes/end order, and a bad header is an error, never a crash.
public func checkBundle(_ bytes: [UInt8]) {
    bytes.withUnsafeBufferPointer { checkBundle($0.baseAddress, $0.count) }
}

func checkBundle(_ start: UnsafePointer<UInt8>?, _ count: Int) {
    guard let start, count > 0 else { return }
    let input = UnsafeRawBufferPointer(start: start, count: count)
    let pieceSize = Int(input[0]) + 1
    var reader = WireBundleReader()
    var open: (length: Int64, seen: Int64)?
    var offset = 1
    do {
        while offset < count {
            let end = min(count, offset + pieceSize)
            try reader.feed(UnsafeRawBufferPointer(rebasing: input[offset..<end])) { event in
                switch event {
                case .begin(let sha256, let length):
                    precondition(open == nil && sha256.count == 32 && length >= 0)
                    open = (length, 0)
                case .bytes(let bytes):
                    guard let current = open else { preconditionFailure("bytes outside a blob") }
                    precondition(!bytes.isEmpty && current.seen + Int64(bytes.count) <= current.length)
                    open = (current.length, current.seen + Int64(bytes.count))
                case .end:
                    guard let current = open else { preconditionFailure("end outside a blob") }
                    precondition(current.seen == current.length)
                    open = nil
                }
            }
            offset = end
        }
        precondition(reader.atBoundary == (open == nil) || !reader.atBoundary)
    } catch is WireBundleError {
        // A refused bundle: the one clear error the server answers with.
    } catch {
        preconditionFailure("unexpected error \(error)")
    }
}
