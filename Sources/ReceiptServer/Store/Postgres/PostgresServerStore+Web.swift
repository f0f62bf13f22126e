import BlobStore
import Foundation
import PostgresNIO
import ReceiptWire
import WebForms

/// The web view's passwords, sessions and reads in PostgreSQL: the same rows and answers as the
/// embedded catalog's (Rules/WebRules.swift decides who reads what).
extension PostgresServerStore {
    func webPassword(account name: String) async throws -> (account: Account, hash: String)? {
        try await transaction { db in
            try await db.rows("""
                SELECT a.id, a.name, p.hash FROM accounts a JOIN web_passwords p ON p.account_id = a.id WHERE a.name = \(name)
                """).first.map { row in
                let (id, account, hash) = try row.decode((Int64, String, String).self)
                return (Account(id: id, name: account, tokenID: 0), hash)
            }
        }
    }

    func insertSession(idHash: String, account: Int64, csrf: String, createdAt: Int64, expiresAt: Int64) async throws {
        try await transaction { db in
            try await db.run("DELETE FROM web_sessions WHERE expires_at <= \(createdAt)")
            try await db.run("""
                INSERT INTO web_sessions(id_hash, account_id, csrf, created_at, expires_at)
                VALUES (\(idHash), \(account), \(csrf), \(createdAt), \(expiresAt))
                """)
        }
    }

    func session(idHash: String, liveAt now: Int64) async throws -> WebSession? {
        try await transaction { db in
            guard let row = try await db.rows("""
                SELECT a.id, a.name, s.csrf FROM web_sessions s JOIN accounts a ON a.id = s.account_id
                WHERE s.id_hash = \(idHash) AND s.expires_at > \(now)
                """).first else { return nil }
            let (accountID, name, csrf) = try row.decode((Int64, String, String).self)
            return WebSession(account: Account(id: accountID, name: name, tokenID: 0), csrf: csrf)
        }
    }

    func deleteSession(idHash: String) async throws {
        try await transaction { db in try await db.run("DELETE FROM web_sessions WHERE id_hash = \(idHash)") }
    }

    func webReceiptsAttaching(_ blobs: [String], zone: Int64) async throws -> [String: String] {
        try await transaction { db in
            var found: [String: String] = [:]
            for blob in blobs {
                found[blob] = try await db.value("""
                    SELECT rb.record_id FROM record_blobs rb JOIN records r ON r.zone_id = rb.zone_id AND r.id = rb.record_id
                    WHERE rb.sha256 = \(PostgresKey.blob(blob)) AND rb.zone_id = \(zone) AND r.payload IS NOT NULL LIMIT 1
                    """, as: UUID.self).map(PostgresKey.recordID)
            }
            return found
        }
    }

    func webReceipt(zone: Int64, id: String) async throws -> WebReceiptRow? {
        try await transaction { db in
            guard let row = try await db.rows("""
                SELECT change_tag, payload FROM records WHERE zone_id = \(zone) AND id = \(PostgresKey.record(id)) AND payload IS NOT NULL
                """).first else { return nil }
            let (tag, payload) = try row.decode((String, String).self)
            let receipt = try JSONDecoder().decode(WireReceipt.self, from: Data(payload.utf8))
            return WebReceiptRow(id: id, changeTag: tag, receipt: receipt)
        }
    }

    /// One page from `web_rows` (the date index), then those records' payloads; the count and
    /// totals of every match in one grouped pass.
    func webZonePage(_ zone: VisibleZone, filter: WebFilter, offset: Int, limit: Int) async throws -> WebZonePage {
        try await transaction { db in
            var binds = PostgresBindings()
            var clauses: [String] = []
            // Every `?` of a clause stands for its one value, numbered after the binds before it.
            func add(_ sql: String, _ value: String? = nil) {
                guard let value else { return clauses.append(sql) }
                binds.append(value)
                clauses.append(sql.replacingOccurrences(of: "?", with: "$\(binds.count)"))
            }
            binds.append(zone.id)
            clauses.append("w.zone_id = $1")
            if let from = filter.from { add("w.date >= ?", from) }
            if let to = filter.to { add("w.date <= ?", to) }
            if let merchant = filter.merchant { add("strpos(w.merchant, lower(?)) > 0", merchant) }
            if let category = filter.category { add("w.category = lower(?)", category) }
            if let status = filter.status {
                status == "none" ? add("w.status IS NULL") : add("w.status = ?", status)
            }
            // Every word, as a prefix, in the metadata or the text of one of the receipt's blobs
            // (`search`, PostgresWebSearch.swift). The query is made first, then bound as a constant:
            // written as `receipt_web_query($n)` the function ran once per row the date index read
            // (27 ms for a page of 10,000), and the planner could not weigh the GIN index (1.4 ms).
            let words = filter.words.filter(WebSearch.isWord)
            if !words.isEmpty {
                let query = try await db.value("SELECT receipt_web_query(\(words))::text", as: String.self) ?? ""
                binds.append(query)
                clauses.append("w.search @@ $\(binds.count)::tsquery")
            }
            let whereSQL = clauses.joined(separator: " AND ")
            var pageBinds = binds
            pageBinds.append(limit)
            pageBinds.append(offset)
            let rows = try await db.rows(PostgresQuery(unsafeSQL: """
                SELECT r.id, r.change_tag, r.payload
                FROM (SELECT w.zone_id, w.id, w.date, w.created_at FROM web_rows w WHERE \(whereSQL)
                      ORDER BY \(filter.order(newestDate: "w.date DESC NULLS LAST", added: "w.created_at")), w.id
                      LIMIT $\(binds.count + 1) OFFSET $\(binds.count + 2)) p
                JOIN records r ON r.zone_id = p.zone_id AND r.id = p.id
                ORDER BY \(filter.order(newestDate: "p.date DESC NULLS LAST", added: "p.created_at")), p.id
                """, binds: pageBinds))
            let decoder = JSONDecoder()
            let receipts = try rows.map { row in
                let (id, tag, payload) = try row.decode((UUID, String, String).self)
                return WebReceiptRow(id: PostgresKey.recordID(id), changeTag: tag, receipt: try decoder.decode(WireReceipt.self, from: Data(payload.utf8)))
            }
            // Summed exactly as NUMERIC per currency; a total that is no plain number (rare) is
            // grouped by its text and read as the embedded catalog reads it.
            var totals = WebTotals()
            for row in try await db.rows(PostgresQuery(unsafeSQL: """
                SELECT w.currency, CASE WHEN w.amount IS NULL THEN w.total END, sum(w.amount)::text, count(w.amount), count(*)
                FROM web_rows w WHERE \(whereSQL) GROUP BY 1, 2
                """, binds: binds)) {
                let (currency, other, sum, summed, count) = try row.decode((String?, String?, String?, Int64, Int64).self)
                if let sum {
                    totals.add(sum: sum, currency: currency, count: Int(summed))
                    totals.add(total: nil, currency: currency, count: Int(count - summed))
                } else {
                    totals.add(total: other, currency: currency, count: Int(count))
                }
            }
            return WebZonePage(zone: zone, receipts: receipts, matching: totals.matching, totals: totals.totals)
        }
    }
}
