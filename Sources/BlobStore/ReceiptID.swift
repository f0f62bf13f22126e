import Foundation

/// The one generator of receipt ids: a random (version 4) UUID, as 36 lowercase characters in the
/// catalog and on the wire; the vault's imports and the server's web uploads alike (here, beside
/// `BlobID`, because both depend on this module). Drawn from OpenSSL's generator: Foundation's `UUID()` opens
/// /dev/urandom for every id (100,000 opens for a large manifest).
public enum ReceiptID {
    public static func generate() -> UUID {
        var b = SecureRandom.bytes(16)
        b[6] = (b[6] & 0x0F) | 0x40
        b[8] = (b[8] & 0x3F) | 0x80
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    /// A new id in its text form.
    public static func generateText() -> String { text(generate()) }

    /// A receipt id as the catalog and the wire write it (lowercase; Foundation's `uuidString`
    /// formats through snprintf and upper case, which 100,000 rows notice).
    public static func text(_ uuid: UUID) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(36)
        withUnsafeBytes(of: uuid.uuid) { bytes in
            for (i, byte) in bytes.enumerated() {
                if i == 4 || i == 6 || i == 8 || i == 10 { text.append(UInt8(ascii: "-")) }
                text.append(digits[Int(byte >> 4)])
                text.append(digits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: text, as: UTF8.self)
    }
    /// Reads a receipt id in its canonical form (8-4-4-4-12 hexadecimal digits, either case), as Foundation's
    /// `UUID(uuidString:)` reads it, without its `sscanf` (once a row of a large manifest).
    public static func parse(_ text: String) -> UUID? {
        var text = text
        return text.withUTF8 { units -> UUID? in
            guard units.count == 36 else { return nil }
            var uuid: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                       UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
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
}
