import Foundation

/// A receipt's id: a UUID. Made in one place (`generate`, a random version 4 UUID) or read once where
/// an id comes in (`init?(_:)`: a command's argument, a manifest row, the sync wire, a damaged
/// catalog), so a value of this type is always a well-formed id. Its text is canonical: lowercase,
/// 8-4-4-4-12 hexadecimal digits (RFC 9562: UUIDs are case-insensitive on input, lowercase on
/// output), so one receipt is one id whatever the case it was given in. The vault's imports and the
/// server's web uploads alike make theirs here (beside `BlobID`, because both depend on this module).
public struct ReceiptID: Hashable, Comparable, Sendable, CustomStringConvertible, Codable {
    public let uuid: UUID

    public init(_ uuid: UUID) { self.uuid = uuid }

    /// `text` when it is a well-formed id (either case), nil otherwise.
    public init?(_ text: String) {
        var text = text
        guard let uuid = text.withUTF8({ Self.parse($0) }) else { return nil }
        self.uuid = uuid
    }

    /// The id whose 16 bytes are `bytes` (a column's value read in place; exactly 16 bytes).
    public init(bytes: UnsafeRawBufferPointer) {
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &uuid) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes.prefix(16))) }
        self.uuid = UUID(uuid: uuid)
    }

    /// The id in `digits` (a column's text read in place), nil when they are not one.
    public init?(utf8 digits: UnsafeBufferPointer<UInt8>) {
        guard let uuid = Self.parse(digits) else { return nil }
        self.uuid = uuid
    }

    /// A new id. Drawn from OpenSSL's generator: Foundation's `UUID()` opens /dev/urandom for every id
    /// (100,000 opens for a large manifest).
    public static func generate() -> ReceiptID {
        var b = SecureRandom.bytes(16)
        b[6] = (b[6] & 0x0F) | 0x40
        b[8] = (b[8] & 0x3F) | 0x80
        return ReceiptID(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])))
    }

    /// The id as the catalog and the wire write it: lowercase (Foundation's `uuidString` formats
    /// through snprintf and upper case, which 100,000 rows notice).
    public var text: String {
        let digits = Array("0123456789abcdef".utf8)
        return String(unsafeUninitializedCapacity: 36) { out in
            var at = 0
            withUnsafeBytes(of: uuid.uuid) { bytes in
                for (i, byte) in bytes.enumerated() {
                    if i == 4 || i == 6 || i == 8 || i == 10 { out[at] = UInt8(ascii: "-"); at += 1 }
                    out[at] = digits[Int(byte >> 4)]
                    out[at + 1] = digits[Int(byte & 0x0F)]
                    at += 2
                }
            }
            return at
        }
    }

    public var description: String { text }

    /// Its first 8 characters, as listings show a receipt (and a command takes it back as a prefix).
    public var short: String { String(text.prefix(8)) }

    /// The order of the lowercase texts, which is the order of the bytes.
    public static func < (a: ReceiptID, b: ReceiptID) -> Bool {
        withUnsafeBytes(of: a.uuid.uuid) { x in
            withUnsafeBytes(of: b.uuid.uuid) { y in x.lexicographicallyPrecedes(y) }
        }
    }

    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = ReceiptID(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "'\(text.prefix(64))' is not a receipt id"))
        }
        self = id
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(text)
    }

    /// Reads 8-4-4-4-12 hexadecimal digits (either case), as Foundation's `UUID(uuidString:)` reads
    /// them, without its `sscanf` (once a row of a large manifest).
    static func parse(_ units: UnsafeBufferPointer<UInt8>) -> UUID? {
        guard units.count == 36 else { return nil }
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let ok = withUnsafeMutableBytes(of: &uuid) { bytes -> Bool in
            var at = 0
            for i in 0..<16 {
                if at == 8 || at == 13 || at == 18 || at == 23 {
                    guard units[at] == UInt8(ascii: "-") else { return false }
                    at += 1
                }
                guard let byte = BlobID.hexByte(units, at: at) else { return false }
                bytes[i] = byte
                at += 2
            }
            return true
        }
        return ok ? UUID(uuid: uuid) : nil
    }
}
