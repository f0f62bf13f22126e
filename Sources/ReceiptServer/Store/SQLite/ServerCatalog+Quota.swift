import Foundation
import BlobStore
import GRDB

/// Storage quotas in SQLite: what counts is QuotaRules.swift's, summed in this database's SQL.
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
}
