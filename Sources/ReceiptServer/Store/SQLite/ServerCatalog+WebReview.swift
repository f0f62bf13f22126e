import Foundation
import GRDB
import ReceiptWire

/// The web view's review queue in SQLite: the live records whose payload carries readings (`filled`
/// or `suggestions`, protocol revision 6), found through a partial index on `records` (migration
/// `server-web-review`) that holds only them, so counting and stepping through the queue reads no
/// other record and no write path changes for it. The queries name their index: without `ANALYZE`
/// statistics SQLite's planner prefers the primary key and would read every record of the zone.
extension ServerCatalog {
    /// A record's payload has readings: the condition of the partial index, and of every query that
    /// is to use it (SQLite uses it only for a WHERE clause that has this very term).
    static let hasReadings = "(json_extract(payload, '$.filled') IS NOT NULL OR json_extract(payload, '$.suggestions') IS NOT NULL)"

    static func registerWebReviewMigration(_ m: inout DatabaseMigrator) {
        m.registerMigration("server-web-review") { db in
            try db.execute(sql: "CREATE INDEX records_to_review ON records(zoneID, id) WHERE \(hasReadings)")
        }
    }

    func webReviewCount(zone: Int64) async throws -> Int {
        try await pool.read { db in try Self.reviewCount(db, zone) }
    }

    static func reviewCount(_ db: Database, _ zone: Int64) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT count(*) FROM records INDEXED BY records_to_review WHERE zoneID = ? AND \(hasReadings)",
                         arguments: [zone]) ?? 0
    }

    func webReviewQueue(_ zone: VisibleZone, start: WebReviewStart) async throws -> WebReviewQueue {
        try await pool.read { db in
            let count = try Self.reviewCount(db, zone.id)
            guard let row = try Row.fetchOne(db, sql: """
                SELECT id, changeTag, payload FROM records INDEXED BY records_to_review
                WHERE zoneID = ? AND id \(start.inclusive ? ">=" : ">") ? AND \(Self.hasReadings) ORDER BY id LIMIT 1
                """, arguments: [zone.id, StoredKey.record(start.id)]) else { return WebReviewQueue(zone: zone, count: count, row: nil, twins: []) }
            let payload: String = row["payload"]
            let receipt = try JSONDecoder().decode(WireReceipt.self, from: Data(payload.utf8))
            var twins: [String] = []
            if let merchant = receipt.merchant, let date = receipt.date, let total = receipt.total {
                // webRows keeps the merchant lowercased.
                twins = try DatabaseValue.fetchAll(db, sql: """
                    SELECT id FROM webRows INDEXED BY webRows_by_amount WHERE zoneID = ? AND currency IS ? AND total = ? AND date = ? AND merchant = lower(?) AND id <> ?
                    ORDER BY id LIMIT ?
                    """, arguments: [zone.id, receipt.currency, total, date, merchant, row["id"], WebReviewQueue.maxTwins]).map(StoredKey.recordID)
            }
            return WebReviewQueue(zone: zone, count: count, row: WebReceiptRow(id: StoredKey.recordID(row["id"]), changeTag: row["changeTag"], receipt: receipt),
                                  twins: twins)
        }
    }
}
