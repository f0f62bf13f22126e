import BlobStore
import ReceiptWire
#if canImport(Glibc)
import Glibc
#endif

/// The server's rules that hold whichever database keeps the catalog: names, tokens, passwords,
/// gc's grace and push's checks. The stores (Store/SQLite, Store/Postgres) keep data; they call
/// these rather than each writing its own copy.
public enum ServerRules {
    /// The label of the token `account-add` creates.
    public static let defaultTokenLabel = "default"

    static func zoneLabel(_ owner: String, _ name: String) -> String { "zone \(owner)/\(name)" }

    static func checkName(_ name: String, _ what: String) throws {
        guard WireName.isValid(name) else {
            throw ServerError.bad("invalid \(what) \"\(name)\": use 1 to 64 letters, digits, '.', '_' or '-'")
        }
    }

    static func tokenHash(_ token: String) -> String {
        SHA256Hasher.hash(Array(token.utf8)).hex
    }

    /// Accounts authenticate by comparing stored and presented hashes without an early exit.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<a.count { diff |= a[i] ^ b[i] }
        return diff == 0
    }

    static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}
