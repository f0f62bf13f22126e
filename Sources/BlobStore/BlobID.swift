/// The address of a blob: the SHA-256 of its original bytes (before any compression).
/// `description` is the lowercase 64-hex form used in file names, the catalog and the wire.
public struct BlobID: Hashable, Comparable, Sendable, CustomStringConvertible, Codable {
    // The 32 bytes as big-endian words, held inline (no 64 characters on the heap per address):
    // comparing them in turn compares the bytes, and so the hex digits.
    private let w0, w1, w2, w3: UInt64

    /// Accepts exactly 64 hexadecimal characters, in either case; nil otherwise.
    public init?(hex: String) {
        var hex = hex
        guard let id = hex.withUTF8({ BlobID(hexDigits: $0) }) else { return nil }
        self = id
    }

    /// The same from the UTF-8 bytes of the text (SQLite's column text, without a `String` made of it).
    /// Digits are decoded branch-light and checked once at the end: `list` reads one address per
    /// file, and the checked digit-by-digit decoding was 5 % of a month's `list` at a million.
    public init?(hexDigits text: UnsafeBufferPointer<UInt8>) {
        guard text.count == 64, let base = text.baseAddress else { return nil }
        var invalid: UInt8 = 0
        func word(_ k: Int) -> UInt64 {
            var w: UInt64 = 0
            for i in 0..<16 {
                let n = Self.nibble(base[16 * k + i])
                invalid |= n
                w = w << 4 | UInt64(n & 0x0F)
            }
            return w
        }
        (w0, w1, w2, w3) = (word(0), word(1), word(2), word(3))
        if invalid & 0xF0 != 0 { return nil }
    }

    /// A hexadecimal digit's value (either case), or 0xFF for any other byte.
    @inline(__always)
    private static func nibble(_ c: UInt8) -> UInt8 {
        let digit = c &- 48
        if digit < 10 { return digit }
        let letter = (c | 0x20) &- 97
        return letter < 6 ? letter + 10 : 0xFF
    }

    public init(digest: [UInt8]) {
        precondition(digest.count == 32, "a SHA-256 digest has 32 bytes")
        self = digest.withUnsafeBytes { BlobID(bytes: $0) }
    }

    /// From the 32 bytes in place (the catalog's column, without an array made of it).
    public init(bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count == 32, "a SHA-256 digest has 32 bytes")
        func word(_ start: Int) -> UInt64 { UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: start, as: UInt64.self)) }
        (w0, w1, w2, w3) = (word(0), word(8), word(16), word(24))
    }

    /// The 32 bytes, in order (a tuple of four words is laid out contiguously).
    public func withBytes<T>(_ body: (UnsafeRawBufferPointer) -> T) -> T {
        withUnsafeBytes(of: (w0.bigEndian, w1.bigEndian, w2.bigEndian, w3.bigEndian), body)
    }

    /// The lowercase 64-hex form (the catalog's, the file names' and the wire's), made when asked.
    public var hex: String { withBytes(Self.hexText) }

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
    public var digest: [UInt8] { withBytes { Array($0) } }

    public var description: String { hex }
    /// The fan-out folder a blob file lives in: the first two hex digits.
    public var fanOut: String { String(hex.prefix(2)) }

    public static func < (a: BlobID, b: BlobID) -> Bool { (a.w0, a.w1, a.w2, a.w3) < (b.w0, b.w1, b.w2, b.w3) }

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
