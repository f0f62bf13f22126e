import Foundation
import BlobStore
import GRDB

/// Storage quotas in SQLite: the rules are QuotaRules.swift's, summed in this database's SQL.
extension ServerCatalog {
    /// The bytes counted against the account.
    static func usage(_ db: Database, accountID: Int64) throws -> StorageUse {
        let row = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT (SELECT COALESCE(SUM(b.size), 0) FROM blobs b WHERE b.sha256 IN (
                        SELECT rb.sha256 FROM recordBlobs rb JOIN zones z ON z.id = rb.zoneID WHERE z.ownerID = ?1
                        UNION
                        SELECT p.sha256 FROM possessions p WHERE p.accountID = ?1 AND NOT EXISTS (
                            SELECT 1 FROM recordBlobs rb JOIN zones z ON z.id = rb.zoneID WHERE rb.sha256 = p.sha256
                            AND (z.ownerID = ?1 OR EXISTS (SELECT 1 FROM shares s WHERE s.zoneID = z.id AND s.accountID = ?1))))),
                   (SELECT COALESCE(SUM(bytes), 0) FROM blobTexts WHERE ownerID = ?1),
                   (SELECT COALESCE(SUM(recordBytes), 0) FROM zones WHERE ownerID = ?1)
            """), arguments: [accountID])
        return StorageUse(blobs: row?[0] ?? 0, texts: row?[1] ?? 0, records: row?[2] ?? 0)
    }

    /// Runs `change` (inside the caller's transaction) and throws an over-quota refusal, which rolls the transaction
    /// back, when it left any of the accounts over its quota with more bytes than before
    /// (`StorageUse.check`).
    static func withinQuota<T>(_ db: Database, accountIDs: [Int64], _ change: () throws -> T) throws -> T {
        var limited: [(id: Int64, name: String, quota: Int64, before: Int64)] = []
        for id in Set(accountIDs).sorted() {
            guard let row = try Row.fetchOne(db, sql: "SELECT name, quota FROM accounts WHERE id = ?", arguments: [id]),
                  let quota: Int64 = row["quota"] else { continue }
            limited.append((id, row["name"], quota, try usage(db, accountID: id).total))
        }
        let result = try change()
        for account in limited {
            try StorageUse.check(account: account.name, quota: account.quota, before: account.before,
                                 after: try usage(db, accountID: account.id).total)
        }
        return result
    }

    static func withinQuota<T>(_ db: Database, accountID: Int64, _ change: () throws -> T) throws -> T {
        try withinQuota(db, accountIDs: [accountID], change)
    }
}
