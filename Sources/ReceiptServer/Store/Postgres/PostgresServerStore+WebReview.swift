import Foundation
import PostgresNIO
import ReceiptWire

/// The web view's review queue in PostgreSQL, as the embedded catalog's (ServerCatalog+WebReview.swift):
/// a partial index on `records` of the live records whose payload carries readings (schema version 8).
extension PostgresServerStore {
    /// A record's payload has readings: the predicate of the partial index, written the same in every query.
    static let hasReadings = "(payload IS NOT NULL AND payload::jsonb ?| array['filled', 'suggestions'])"

    static let webReviewMigration: [PostgresQuery] = [
        PostgresQuery(unsafeSQL: "CREATE INDEX records_to_review ON records(zone_id, id) WHERE \(hasReadings)"),
    ]

    func webReviewCount(zone: Int64) async throws -> Int {
        try await transaction { db in try await Self.reviewCount(db, zone) }
    }

    static func reviewCount(_ db: PostgresConnection, _ zone: Int64) async throws -> Int {
        var binds = PostgresBindings()
        binds.append(zone)
        return Int(try await db.value(PostgresQuery(unsafeSQL: "SELECT count(*) FROM records WHERE zone_id = $1 AND \(hasReadings)",
                                                    binds: binds), as: Int64.self) ?? 0)
    }

    func webReviewQueue(_ zone: VisibleZone, start: WebReviewStart) async throws -> WebReviewQueue {
        try await transaction { db in
            let count = try await Self.reviewCount(db, zone.id)
            var binds = PostgresBindings()
            binds.append(zone.id)
            // No id yet (or none that is one): from the first.
            binds.append(PostgresKey.record(start.id) ?? UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
            guard let row = try await db.rows(PostgresQuery(unsafeSQL: """
                SELECT id, change_tag, payload FROM records
                WHERE zone_id = $1 AND id \(start.inclusive ? ">=" : ">") $2 AND \(Self.hasReadings) ORDER BY id LIMIT 1
                """, binds: binds)).first else { return WebReviewQueue(zone: zone, count: count, row: nil, twins: []) }
            let (id, tag, payload) = try row.decode((UUID, String, String).self)
            let receipt = try JSONDecoder().decode(WireReceipt.self, from: Data(payload.utf8))
            var twins: [String] = []
            if let merchant = receipt.merchant, let date = receipt.date, let total = receipt.total {
                for twin in try await db.rows("""
                    SELECT id FROM web_rows WHERE zone_id = \(zone.id) AND currency IS NOT DISTINCT FROM \(receipt.currency)
                    AND total = \(total) AND date = \(date) AND merchant = lower(\(merchant)) AND id <> \(id)
                    ORDER BY id LIMIT \(WebReviewQueue.maxTwins)
                    """) {
                    twins.append(PostgresKey.recordID(try twin.decode(UUID.self)))
                }
            }
            return WebReviewQueue(zone: zone, count: count, row: WebReceiptRow(id: PostgresKey.recordID(id), changeTag: tag, receipt: receipt), twins: twins)
        }
    }
}
