import BlobStore

// The xz decoder fed untrusted bytes (a blob read back from the store, possibly damaged), in pieces:
// it must produce output or throw XZError, never crash or hang. Odd first byte: instead compress the
// input and check that decompressing gives it back.
public func checkXZ(_ bytes: [UInt8]) {
    bytes.withUnsafeBufferPointer { checkXZ($0.baseAddress, $0.count) }
}

func checkXZ(_ start: UnsafePointer<UInt8>?, _ count: Int) {
    guard let start, count > 0 else { return }
    let input = UnsafeRawBufferPointer(start: start, count: count)
    let body = UnsafeRawBufferPointer(rebasing: input[1...])
    if input[0] & 1 == 1 {
        var packed: [UInt8] = []
        do {
            let encoder = try XZStream(.compress(preset: 0), outputChunk: 4096)
            try encoder.process(body) { packed.append(contentsOf: $0) }
            try encoder.finish { packed.append(contentsOf: $0) }
        } catch {
            preconditionFailure("compression failed: \(error)")
        }
        var unpacked: [UInt8] = []
        do {
            let decoder = try XZStream(.decompress, outputChunk: 4096)
            try packed.withUnsafeBytes { try decoder.process($0) { unpacked.append(contentsOf: $0) } }
            try decoder.finish { unpacked.append(contentsOf: $0) }
        } catch {
            preconditionFailure("decompressing what was compressed failed: \(error)")
        }
        precondition(unpacked.elementsEqual(body), "xz round trip changed the data")
        return
    }
    let pieceSize = Int(input[0]) * 4 + 1
    var produced = 0
    do {
        let decoder = try XZStream(.decompress, outputChunk: 4096)
        var offset = 0
        while offset < body.count {
            let end = min(body.count, offset + pieceSize)
            try decoder.process(UnsafeRawBufferPointer(rebasing: body[offset..<end])) { produced += $0.count }
            offset = end
        }
        try decoder.finish { produced += $0.count }
    } catch is XZError {
        // Damaged or truncated input: one clear error.
    } catch {
        preconditionFailure("unexpected error \(error)")
    }
}
