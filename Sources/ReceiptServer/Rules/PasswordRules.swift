import BlobStore
import CSHA
import Foundation

/// Web passwords and sessions. A password is kept only as a PBKDF2-HMAC-SHA256 hash (libcrypto,
/// a random salt, 600,000 iterations as OWASP advises), compared in constant time. A session is a
/// random 256-bit id of which only the SHA-256 is stored (like tokens), with its own CSRF token and
/// an expiry; `sessions-revoke` and `passwd` end an account's sessions at its next request.
extension ServerRules {
    static let passwordIterations = 600_000
    /// How long a session lasts after sign-in.
    static let sessionLifetimeMilliseconds: Int64 = 12 * 3600 * 1000

    static func validatePassword(_ password: String) throws {
        guard password.utf8.count >= 8 else { throw ServerError.bad("the password must be at least 8 characters long") }
        guard password.utf8.count <= 1024 else { throw ServerError.bad("the password must be at most 1024 bytes long") }
    }

    /// `pbkdf2-sha256$ITERATIONS$SALT$HASH` (hex).
    static func passwordHash(_ password: String, salt: [UInt8], iterations: Int) throws -> String {
        "pbkdf2-sha256$\(iterations)$\(salt.hexString)$\(try pbkdf2(password, salt: salt, iterations: iterations).hexString)"
    }

    static func pbkdf2(_ password: String, salt: [UInt8], iterations: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        let pass = Array(password.utf8)
        let ok = pass.withUnsafeBufferPointer { p in
            salt.withUnsafeBufferPointer { s in
                out.withUnsafeMutableBufferPointer { o in
                    p.baseAddress!.withMemoryRebound(to: CChar.self, capacity: max(pass.count, 1)) { pc in
                        PKCS5_PBKDF2_HMAC(pc, Int32(pass.count), s.baseAddress, Int32(salt.count), Int32(iterations),
                                          EVP_sha256(), 32, o.baseAddress)
                    }
                }
            }
        }
        guard ok == 1 else { throw ServerError(.failed, "the password could not be hashed (libcrypto failed)") }
        return out
    }

    /// True when `password` matches the stored hash (constant-time comparison of the derived keys).
    static func passwordMatches(_ password: String, stored: String) -> Bool {
        let parts = stored.split(separator: "$")
        guard parts.count == 4, parts[0] == "pbkdf2-sha256", let iterations = Int(parts[1]), iterations > 0,
              let salt = [UInt8](hex: String(parts[2])), let expected = [UInt8](hex: String(parts[3])),
              let actual = try? pbkdf2(password, salt: salt, iterations: iterations), actual.count == expected.count
        else { return false }
        return actual.withUnsafeBytes { a in expected.withUnsafeBytes { e in CRYPTO_memcmp(a.baseAddress, e.baseAddress, a.count) } } == 0
    }

    static let decoyHash: String = (try? passwordHash("decoy", salt: [UInt8](repeating: 0, count: 16),
                                                      iterations: passwordIterations)) ?? ""
}

struct WebSession: Sendable {
    let account: Account
    let csrf: String

    /// Constant-time check of a submitted CSRF token.
    func accepts(csrf submitted: String?) -> Bool {
        guard let submitted else { return false }
        let a = Array(submitted.utf8), b = Array(csrf.utf8)
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { x in b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress, y.baseAddress, x.count) } } == 0
    }
}

extension Array where Element == UInt8 {
    var hexString: String { map { String(format: "%02x", $0) }.joined() }

    init?(hex: String) {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var i = 0
        while i < digits.count {
            guard let byte = UInt8(String(decoding: digits[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
            i += 2
        }
        self = bytes
    }
}
