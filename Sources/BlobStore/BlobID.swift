/// The address of a blob: the SHA-256 of its original bytes (before any compression).
/// `description` is the lowercase 64-hex form used in file names, the catalog and the wire.
public struct BlobID: Hashable, Comparable, Sendable, CustomStringConvertible, Codable {
    public let hex: String

    /// Accepts exactly 64 hexadecimal characters, in either case; nil otherwise.
    public init?(hex: String) {
        var hex = hex
        let lowercase = hex.withUTF8 { text -> Bool? in
            guard text.count == 64 else { return nil }
            var lowercase = true
            for c in text {
                guard Self.hexValue(c) != nil else { return nil }
                if c >= 65 && c <= 70 { lowercase = false }
            }
            return lowercase
        }
        guard let lowercase else { return nil }
        self.hex = lowercase ? hex : hex.lowercased()
    }

    public init(digest: [UInt8]) {
        precondition(digest.count == 32, "a SHA-256 digest has 32 bytes")
        self.hex = digest.withUnsafeBytes(Self.hexText)
    }

    /// Bytes as lowercase hex digits, written in place.
    public static func hexText(_ bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            let digits: StaticString = "0123456789abcdef"
            digits.withUTF8Buffer { digit in
                for (i, byte) in bytes.enumerated() {
                    out[2 * i] = digit[Int(byte >> 4)]
                    out[2 * i + 1] = digit[Int(byte & 0x0f)]
                }
            }
            return bytes.count * 2
        }
    }

    /// The address's 32 bytes (as the wire's bundle headers carry it).
    public var digest: [UInt8] {
        var hex = hex
        return hex.withUTF8 { text in (0..<32).map { Self.hexByte(text, at: 2 * $0) ?? 0 } }
    }

    public var description: String { hex }
    /// The fan-out folder a blob file lives in: the first two hex digits.
    public var fanOut: String { String(hex.prefix(2)) }

    public static func < (a: BlobID, b: BlobID) -> Bool { a.hex < b.hex }

    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = BlobID(hex: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                    debugDescription: "not a SHA-256 hex address: \(text)"))
        }
        self = id
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(hex)
    }

    static func isHexDigit(_ c: UInt8) -> Bool { hexValue(c) != nil }

    /// The byte written by the two hexadecimal digits at `offset` and `offset + 1`; nil where either
    /// is not one.
    public static func hexByte(_ text: UnsafeBufferPointer<UInt8>, at offset: Int) -> UInt8? {
        guard let high = hexValue(text[offset]), let low = hexValue(text[offset + 1]) else { return nil }
        return high << 4 | low
    }

    /// The value of one hexadecimal digit, either case; nil for any other byte.
    public static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: c - 48
        case 97...102: c - 87
        case 65...70: c - 55
        default: nil
        }
    }
}
