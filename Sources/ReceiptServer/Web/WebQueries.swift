import BlobStore
import Foundation
import GRDB
import ReceiptWire

/// What the receipt list is filtered by (every field optional).
struct WebFilter: Sendable {
    var words: [String] = []
    var from: String?
    var to: String?
    var merchant: String?
    var category: String?
}

struct WebReceiptRow: Sendable {
    let id: String
    let changeTag: String
    let receipt: WireReceipt
}

struct WebZonePage: Sendable {
    let zone: VisibleZone
    let receipts: [WebReceiptRow]
    let matching: Int
    /// Exact sums per currency of the matching receipts that have a total.
    let totals: [(currency: String, total: Decimal, count: Int)]
}

/// The web view's reads. Every one starts with `requireZone`, the server's one authorization rule:
/// a zone the account cannot read is "not found", exactly as in the sync API.
extension ServerCatalog {
    /// One page of the zone's live receipts, newest date first (undated last), with the totals of
    /// every receipt the filter matches. Filters run in SQLite over the stored JSON.
    func webZonePage(owner: String, name: String, filter: WebFilter, offset: Int, limit: Int,
                     caller: Account) async throws -> WebZonePage {
        try await pool.read { db in
            let zone = try Self.requireZone(db, owner: owner, name: name, caller: caller)
            var clauses = ["zoneID = ?", "payload IS NOT NULL"]
            var arguments: StatementArguments = [zone.id]
            // Words: each must appear in the receipt's metadata or an attachment's file name.
            let words = """
                instr(lower(coalesce(json_extract(payload, '$.merchant'), '') || ' ' ||
                    coalesce(json_extract(payload, '$.category'), '') || ' ' ||
                    coalesce(json_extract(payload, '$.note'), '') || ' ' ||
                    coalesce(json_extract(payload, '$.total'), '') || ' ' ||
                    coalesce(json_extract(payload, '$.tags'), '') || ' ' ||
                    coalesce((SELECT group_concat(json_extract(a.value, '$.filename'), ' ')
                              FROM json_each(payload, '$.attachments') a), '')), lower(?)) > 0
                """
            let conditions: [(sql: String, value: String?)] = [
                ("json_extract(payload, '$.date') >= ?", filter.from),
                ("json_extract(payload, '$.date') <= ?", filter.to),
                ("instr(lower(coalesce(json_extract(payload, '$.merchant'), '')), lower(?)) > 0", filter.merchant),
                ("lower(json_extract(payload, '$.category')) = lower(?)", filter.category),
            ] + filter.words.map { (words, $0) }
            for condition in conditions {
                guard let value = condition.value else { continue }
                clauses.append(condition.sql)
                _ = arguments.append(contentsOf: [value])
            }
            let whereSQL = clauses.joined(separator: " AND ")
            var pageArguments = arguments
            _ = pageArguments.append(contentsOf: [limit, offset])
            let rows = try Row.fetchAll(db, sql: """
                SELECT id, changeTag, payload FROM records WHERE \(whereSQL)
                ORDER BY json_extract(payload, '$.date') IS NULL, json_extract(payload, '$.date') DESC,
                         json_extract(payload, '$.createdAt') DESC, id
                LIMIT ? OFFSET ?
                """, arguments: pageArguments)
            let decoder = JSONDecoder()
            let receipts = try rows.map { row in
                let payload: String = row["payload"]
                return WebReceiptRow(id: row["id"], changeTag: row["changeTag"],
                                     receipt: try decoder.decode(WireReceipt.self, from: Data(payload.utf8)))
            }
            // One pass for the count and the totals: SQLite groups equal amounts, Swift sums the groups
            // exactly as decimals (a few hundred rows rather than one per receipt).
            var sums: [String: (Decimal, Int)] = [:]
            var matching = 0
            let groups = try Row.fetchCursor(db, sql: """
                SELECT json_extract(payload, '$.total') AS total, json_extract(payload, '$.currency') AS currency,
                       count(*) AS n
                FROM records WHERE \(whereSQL) GROUP BY 1, 2
                """, arguments: arguments)
            while let row = try groups.next() {
                let n: Int = row["n"]
                matching += n
                guard let text: String = row["total"], let amount = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))
                else { continue }
                let currency: String = row["currency"] ?? "(none)"
                let sum = sums[currency] ?? (0, 0)
                sums[currency] = (sum.0 + amount * Decimal(n), sum.1 + n)
            }
            let totals = sums.sorted { $0.key < $1.key }.map { (currency: $0.key, total: $0.value.0, count: $0.value.1) }
            return WebZonePage(zone: zone, receipts: receipts, matching: matching, totals: totals)
        }
    }

    /// A live receipt of a zone the caller can read, with the zone; 404 otherwise (absent, deleted
    /// or not readable: the same answer).
    func webReceipt(owner: String, name: String, id: String, caller: Account) async throws -> (VisibleZone, WebReceiptRow) {
        guard WireName.isValidRecordID(id) else { throw ServerError.notFound("receipt \(id)") }
        return try await pool.read { db in
            let zone = try Self.requireZone(db, owner: owner, name: name, caller: caller)
            guard let row = try Row.fetchOne(db, sql: """
                SELECT changeTag, payload FROM records WHERE zoneID = ? AND id = ? AND payload IS NOT NULL
                """, arguments: [zone.id, id]) else { throw ServerError.notFound("receipt \(id)") }
            let payload: String = row["payload"]
            let receipt = try JSONDecoder().decode(WireReceipt.self, from: Data(payload.utf8))
            return (zone, WebReceiptRow(id: id, changeTag: row["changeTag"], receipt: receipt))
        }
    }

    /// The zone as the caller sees it (404 when it cannot read it).
    func webZone(owner: String, name: String, caller: Account) async throws -> VisibleZone {
        try await pool.read { db in try Self.requireZone(db, owner: owner, name: name, caller: caller) }
    }
}
