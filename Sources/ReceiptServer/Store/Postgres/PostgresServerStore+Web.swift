import BlobStore
import Foundation
import PostgresNIO
import ReceiptWire
import WebForms

/// The web view's passwords, sessions and reads in PostgreSQL: the same rules, hashes and answers
/// as the embedded catalog's (PasswordRules.swift for the rules).
extension PostgresServerStore {
    func checkPassword(account name: String, password: String) async throws -> Account? {
        let row = try await transaction { db in
            try await db.rows("""
                SELECT a.id, a.name, p.hash FROM accounts a JOIN web_passwords p ON p.account_id = a.id WHERE a.name = \(name)
                """).first.map { try $0.decode((Int64, String, String).self) }
        }
        guard let (id, account, hash) = row else {
            _ = ServerRules.passwordMatches(password, stored: ServerRules.decoyHash)
            return nil
        }
        guard ServerRules.passwordMatches(password, stored: hash) else { return nil }
        return Account(id: id, name: account, tokenID: 0)
    }

    func openSession(for account: Account) async throws -> String {
        let id = SecureRandom.hex(32)
        let hash = ServerRules.tokenHash(id), csrf = SecureRandom.hex(32)
        try await transaction { db in
            let now = ServerRules.now()
            try await db.run("DELETE FROM web_sessions WHERE expires_at <= \(now)")
            try await db.run("""
                INSERT INTO web_sessions(id_hash, account_id, csrf, created_at, expires_at)
                VALUES (\(hash), \(account.id), \(csrf), \(now), \(now + ServerRules.sessionLifetimeMilliseconds))
                """)
        }
        return id
    }

    func session(_ id: String) async throws -> WebSession? {
        guard id.utf8.count == 64 else { return nil }
        let hash = ServerRules.tokenHash(id)
        return try await transaction { db in
            guard let row = try await db.rows("""
                SELECT a.id, a.name, s.csrf FROM web_sessions s JOIN accounts a ON a.id = s.account_id
                WHERE s.id_hash = \(hash) AND s.expires_at > \(ServerRules.now())
                """).first else { return nil }
            let (accountID, name, csrf) = try row.decode((Int64, String, String).self)
            return WebSession(account: Account(id: accountID, name: name, tokenID: 0), csrf: csrf)
        }
    }

    func closeSession(_ id: String) async throws {
        let hash = ServerRules.tokenHash(id)
        try await transaction { db in try await db.run("DELETE FROM web_sessions WHERE id_hash = \(hash)") }
    }

    func webZone(owner: String, name: String, caller: Account) async throws -> VisibleZone {
        try await transaction { db in try await Self.requireZone(db, owner: owner, name: name, caller: caller) }
    }

    func webReceiptsAttaching(_ blobs: [String], owner: String, name: String, caller: Account) async throws -> [String: String] {
        try await transaction { db in
            let zone = try await Self.requireZone(db, owner: owner, name: name, caller: caller)
            var found: [String: String] = [:]
            for blob in blobs {
                found[blob] = try await db.value("""
                    SELECT rb.record_id FROM record_blobs rb JOIN records r ON r.zone_id = rb.zone_id AND r.id = rb.record_id
                    WHERE rb.sha256 = \(blob) AND rb.zone_id = \(zone.id) AND r.payload IS NOT NULL LIMIT 1
                    """, as: String.self)
            }
            return found
        }
    }

    func webReceipt(owner: String, name: String, id: String, caller: Account) async throws -> (VisibleZone, WebReceiptRow) {
        guard WireName.isValidRecordID(id) else { throw ServerError.notFound("receipt \(id)") }
        return try await transaction { db in
            let zone = try await Self.requireZone(db, owner: owner, name: name, caller: caller)
            guard let row = try await db.rows("""
                SELECT change_tag, payload FROM records WHERE zone_id = \(zone.id) AND id = \(id) AND payload IS NOT NULL
                """).first else { throw ServerError.notFound("receipt \(id)") }
            let (tag, payload) = try row.decode((String, String).self)
            let receipt = try JSONDecoder().decode(WireReceipt.self, from: Data(payload.utf8))
            return (zone, WebReceiptRow(id: id, changeTag: tag, receipt: receipt))
        }
    }

    /// One page from `web_rows` (the date index), then those records' payloads; the count and
    /// totals of every match in one grouped pass.
    func webZonePage(owner: String, name: String, filter: WebFilter, offset: Int, limit: Int,
                     caller: Account) async throws -> WebZonePage {
        try await transaction { db in
            let zone = try await Self.requireZone(db, owner: owner, name: name, caller: caller)
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
                let (id, tag, payload) = try row.decode((String, String, String).self)
                return WebReceiptRow(id: id, changeTag: tag, receipt: try decoder.decode(WireReceipt.self, from: Data(payload.utf8)))
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
