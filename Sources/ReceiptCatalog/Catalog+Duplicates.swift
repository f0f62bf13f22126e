import BlobStore
import GRDB

extension Catalog {
    /// The receipt of `zone` that already holds these bytes (under any file name), if any: how
    /// `receipt watch` recognises a file it has imported before, also after a kill between the
    /// commit and the move out of the inbox (asked in the transaction that would add the receipt).
    public static func receipt(_ db: Database, holdingContent blob: BlobID, inZone zone: String) throws -> ReceiptID? {
        // CROSS JOIN keeps SQLite on attachments_by_blob instead of scanning the zone.
        try ReceiptID.fetchOne(db, sql: """
            SELECT r.id FROM attachments a CROSS JOIN receipts r ON r.rowNumber = a.receiptRow
            WHERE a.sha256 = ? AND r.zone = ? LIMIT 1
            """, arguments: [blob, zone])
    }
}
