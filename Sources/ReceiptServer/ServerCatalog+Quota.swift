import Foundation
import BlobStore
import GRDB

/// Storage quotas. As CloudKit counts shared data against the zone's owner, the bytes of every blob
/// a record of an owner's zones references count against the owner, once per blob however many
/// records reference it; a blob an account uploaded that no record references counts against the
/// uploader (until the server's gc reclaims it).
extension ServerCatalog {
    /// The bytes counted against the account.
    static func usage(_ db: Database, accountID: Int64) throws -> Int64 {
        try Int64.fetchOne(db, sql: """
            SELECT COALESCE(SUM(b.size), 0) FROM blobs b WHERE b.sha256 IN (
                SELECT rb.sha256 FROM recordBlobs rb JOIN zones z ON z.id = rb.zoneID WHERE z.ownerID = ?1
                UNION
                SELECT p.sha256 FROM possessions p WHERE p.accountID = ?1
                    AND NOT EXISTS (SELECT 1 FROM recordBlobs rb WHERE rb.sha256 = p.sha256))
            """, arguments: [accountID]) ?? 0
    }

    static func quota(_ db: Database, accountID: Int64) throws -> Int64? {
        try Int64.fetchOne(db, sql: "SELECT quota FROM accounts WHERE id = ?", arguments: [accountID])
    }

    /// Runs `change` (inside the caller's transaction) and throws 507, which rolls the transaction
    /// back, when it left the account over its quota with more bytes than before. A change that
    /// frees room, or adds nothing new, always passes, so an account over a lowered quota can
    /// still clean up.
    static func withinQuota<T>(_ db: Database, accountID: Int64, _ change: () throws -> T) throws -> T {
        guard let quota = try quota(db, accountID: accountID) else { return try change() }
        let before = try usage(db, accountID: accountID)
        let result = try change()
        let after = try usage(db, accountID: accountID)
        if after > quota && after > before {
            let name = try String.fetchOne(db, sql: "SELECT name FROM accounts WHERE id = ?", arguments: [accountID]) ?? "?"
            throw ServerError(507, "the storage quota of the account \(name) (\(quota) bytes) would be exceeded: "
                + "it uses \(before) bytes and this needs \(after - before) more; the change was not kept "
                + "(the server's administrator can raise it with `receipt server account-quota \(name) SIZE`)")
        }
        return result
    }
}

/// Sizes as a person writes them: `0`, `500000`, `750KB`, `10MB`, `2GiB`, `1TB` (decimal and binary
/// units), or `none` for no limit (nil).
public enum ByteSize {
    public static func parse(_ text: String) -> Int64?? {
        let t = text.trimmingCharacters(in: .whitespaces)
        if t.lowercased() == "none" || t.lowercased() == "unlimited" { return .some(nil) }
        let units: [(String, Int64)] = [
            ("kib", 1 << 10), ("mib", 1 << 20), ("gib", 1 << 30), ("tib", 1 << 40),
            ("kb", 1_000), ("mb", 1_000_000), ("gb", 1_000_000_000), ("tb", 1_000_000_000_000),
            ("k", 1_000), ("m", 1_000_000), ("g", 1_000_000_000), ("t", 1_000_000_000_000), ("b", 1),
        ]
        var digits = Substring(t.lowercased())
        var unit: Int64 = 1
        for (suffix, factor) in units where digits.hasSuffix(suffix) {
            unit = factor
            digits = digits.dropLast(suffix.count)
            break
        }
        digits = Substring(digits.trimmingCharacters(in: .whitespaces))
        guard !digits.isEmpty, digits.count <= 15, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int64(digits) else {
            return nil
        }
        let (bytes, overflow) = n.multipliedReportingOverflow(by: unit)
        return overflow ? nil : .some(bytes)
    }
}
