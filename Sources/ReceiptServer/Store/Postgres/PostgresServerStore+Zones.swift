import BlobStore
import PostgresNIO
import ReceiptWire

/// The usage sum (QuotaRules.swift says what counts) in PostgreSQL.
extension PostgresServerStore {
    static func usage(_ db: PostgresConnection, accountID: Int64) async throws -> StorageUse {
        guard let row = try await db.rows("""
            SELECT (SELECT COALESCE(SUM(b.size), 0)::BIGINT FROM blobs b WHERE b.sha256 IN (
                        SELECT rb.sha256 FROM record_blobs rb JOIN zones z ON z.id = rb.zone_id WHERE z.owner_id = \(accountID)
                        UNION
                        SELECT p.sha256 FROM possessions p WHERE p.account_id = \(accountID) AND NOT EXISTS (
                            SELECT 1 FROM record_blobs rb JOIN zones z ON z.id = rb.zone_id WHERE rb.sha256 = p.sha256
                            AND (z.owner_id = \(accountID)
                                 OR EXISTS (SELECT 1 FROM shares s WHERE s.zone_id = z.id AND s.account_id = \(accountID)))))),
                   (SELECT COALESCE(SUM(bytes), 0)::BIGINT FROM blob_texts WHERE owner_id = \(accountID)),
                   (SELECT COALESCE(SUM(record_bytes), 0)::BIGINT FROM zones WHERE owner_id = \(accountID))
            """).first else { return StorageUse() }
        let (blobs, texts, records) = try row.decode((Int64, Int64, Int64).self)
        return StorageUse(blobs: blobs, texts: texts, records: records)
    }
}
