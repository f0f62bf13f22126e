import BlobStore
import Foundation
import GRDB
import ReceiptWire
import WebForms

/// The web view's reads of a zone the rules (Rules/WebRules.swift) have found the account may read.
extension ServerCatalog {
    /// `webRows` holds, per live record, the columns the receipt list filters, sorts and sums by,
    /// kept by triggers on `records` (so every write path, sync or web, keeps it current without
    /// knowing of it). Reading them from the JSON payload meant parsing every receipt of the zone
    /// for each page: 70–270 ms on a zone of 10,000 (tools/bench --web). Migration `server-web-search`
    /// makes it again with a rowid of its own (ServerCatalog+WebSearch.swift).
    static func registerWebRowsMigration(_ m: inout DatabaseMigrator) {
        m.registerMigration("server-web-rows") { db in
            try db.execute(sql: """
                CREATE TABLE webRows (
                    zoneID INTEGER NOT NULL,
                    \(webRowsColumns()),
                    PRIMARY KEY (zoneID, id)
                ) WITHOUT ROWID;
                \(webRowsIndexesAndTriggers)
                """)
        }
    }

    /// The list's default order, newest added first (migration `server-web-rows-by-added`).
    static let webRowsByAddedIndex = "CREATE INDEX webRows_by_added ON webRows(zoneID, createdAt DESC, id);"

    static func registerWebRowsByAddedMigration(_ m: inout DatabaseMigrator) {
        m.registerMigration("server-web-rows-by-added") { db in
            if try !db.indexes(on: "webRows").contains(where: { $0.name == "webRows_by_added" }) {
                try db.execute(sql: webRowsByAddedIndex)
            }
        }
    }

    /// The columns of `webRows` after its zone (`id` as text until migration `server-keys-as-bytes`).
    static func webRowsColumns(id: String = "id TEXT NOT NULL") -> String {
        """
        \(id),
        date TEXT,
        createdAt INTEGER NOT NULL,
        merchant TEXT,
        category TEXT,
        status TEXT,
        currency TEXT,
        total TEXT,
        words TEXT NOT NULL
        """
    }

    /// The indexes of `webRows`, the triggers on `records` that keep it, and its rows of the records there are.
    static var webRowsIndexesAndTriggers: String {
        webRowsIndexes + webRowsTriggers + "\(webRowsInsert) SELECT r.zoneID, r.id, \(webRowsValues("r")) FROM records r WHERE r.payload IS NOT NULL;\n"
    }

    static let webRowsIndexes = """
        CREATE INDEX webRows_by_date ON webRows(zoneID, date DESC, createdAt DESC, id);
        \(webRowsByAddedIndex)
        -- Covers the count and totals of every filter but words: no row is looked up for them.
        CREATE INDEX webRows_by_amount ON webRows(zoneID, currency, total, date, status, category, merchant);

        """

    static var webRowsTriggers: String {
        """
        CREATE TRIGGER records_webRows_insert AFTER INSERT ON records WHEN new.payload IS NOT NULL BEGIN
            \(webRowsInsert) SELECT new.zoneID, new.id, \(webRowsValues("new"));
        END;
        CREATE TRIGGER records_webRows_update AFTER UPDATE ON records BEGIN
            DELETE FROM webRows WHERE zoneID = old.zoneID AND id = old.id;
            \(webRowsInsert) SELECT new.zoneID, new.id, \(webRowsValues("new")) WHERE new.payload IS NOT NULL;
        END;
        CREATE TRIGGER records_webRows_delete AFTER DELETE ON records BEGIN
            DELETE FROM webRows WHERE zoneID = old.zoneID AND id = old.id;
        END;

        """
    }

    static let webRowsInsert = "INSERT INTO webRows(zoneID, id, date, createdAt, merchant, category, status, currency, total, words)"

    /// The values of a `webRows` row after its zone and id, from the payload of the record `r`.
    static func webRowsValues(_ r: String) -> String {
        // SQLite 3.40 (Debian 12) has no concat_ws: absent fields are joined as empty strings.
        func field(_ key: String) -> String { "coalesce(json_extract(\(r).payload, '$.\(key)'), '')" }
        let words = ["merchant", "category", "note", "total", "claim", "tags"].map(field).joined(separator: " || ' ' || ")
        return """
            json_extract(\(r).payload, '$.date'), coalesce(json_extract(\(r).payload, '$.createdAt'), 0),
            lower(json_extract(\(r).payload, '$.merchant')), lower(json_extract(\(r).payload, '$.category')),
            json_extract(\(r).payload, '$.status'), json_extract(\(r).payload, '$.currency'),
            json_extract(\(r).payload, '$.total'),
            lower(\(words) || ' ' || coalesce((SELECT group_concat(json_extract(a.value, '$.filename'), ' ')
                                             FROM json_each(\(r).payload, '$.attachments') a), ''))
            """
    }

    /// One page of the zone's live receipts, newest added first (or by date), with the count and
    /// the totals of every receipt the filter matches (one pass over `webRows`, no JSON parsed).
    func webZonePage(_ zone: VisibleZone, filter: WebFilter, offset: Int, limit: Int) async throws -> WebZonePage {
        try await pool.read { db in
            var clauses = ["w.zoneID = ?"]
            var arguments: StatementArguments = [zone.id]
            func add(_ sql: String, _ values: [(any DatabaseValueConvertible)?]) {
                clauses.append(sql)
                _ = arguments.append(contentsOf: StatementArguments(values))
            }
            if let from = filter.from { add("w.date >= ?", [from]) }
            if let to = filter.to { add("w.date <= ?", [to]) }
            if let merchant = filter.merchant { add("instr(w.merchant, lower(?)) > 0", [merchant]) }
            if let category = filter.category { add("w.category = lower(?)", [category]) }
            if let status = filter.status {
                status == "none" ? add("w.status IS NULL", []) : add("w.status = ?", [status])
            }
            // Every word, as a prefix, in the metadata or the text of one of the receipt's blobs: one
            // lookup in the full-text index, whose rows are those of every zone (ServerCatalog+WebSearch.swift).
            if let match = WebSearch.match(filter.words) {
                add("w.docID IN (SELECT rowid FROM webSearch WHERE webSearch MATCH ?)", [match])
            }
            let whereSQL = clauses.joined(separator: " AND ")
            var pageArguments = arguments
            _ = pageArguments.append(contentsOf: [limit, offset])
            // The page's keys from the date index alone, then only those records' payloads.
            let rows = try Row.fetchAll(db, sql: """
                SELECT r.id, r.changeTag, r.payload
                FROM (SELECT w.zoneID, w.id, w.date, w.createdAt FROM webRows w WHERE \(whereSQL)
                      ORDER BY \(filter.order(newestDate: "w.date DESC", added: "w.createdAt")), w.id LIMIT ? OFFSET ?) p
                JOIN records r ON r.zoneID = p.zoneID AND r.id = p.id
                ORDER BY \(filter.order(newestDate: "p.date DESC", added: "p.createdAt")), p.id
                """, arguments: pageArguments)
            let decoder = JSONDecoder()
            let receipts = try rows.map { row in
                let payload: String = row["payload"]
                return WebReceiptRow(id: StoredKey.recordID(row["id"]), changeTag: row["changeTag"],
                                     receipt: try decoder.decode(WireReceipt.self, from: Data(payload.utf8)))
            }
            var totals = WebTotals()
            let groups = try Row.fetchCursor(db, sql: """
                SELECT w.total, w.currency, count(*) AS n FROM webRows w WHERE \(whereSQL) GROUP BY w.currency, w.total
                """, arguments: arguments)
            while let row = try groups.next() { totals.add(total: row["total"], currency: row["currency"], count: row["n"]) }
            return WebZonePage(zone: zone, receipts: receipts, matching: totals.matching, totals: totals.totals)
        }
    }

    func webReceipt(zone: Int64, id: String) async throws -> WebReceiptRow? {
        try await pool.read { db in
            guard let row = try Row.fetchOne(db, sql: """
                SELECT changeTag, payload FROM records WHERE zoneID = ? AND id = ? AND payload IS NOT NULL
                """, arguments: [zone, StoredKey.record(id)]) else { return nil }
            let payload: String = row["payload"]
            let receipt = try JSONDecoder().decode(WireReceipt.self, from: Data(payload.utf8))
            return WebReceiptRow(id: id, changeTag: row["changeTag"], receipt: receipt)
        }
    }

    func webReceiptsAttaching(_ blobs: [String], zone: Int64) async throws -> [String: String] {
        try await pool.read { db in
            var found: [String: String] = [:]
            for blob in blobs {
                found[blob] = try DatabaseValue.fetchOne(db, sql: """
                    SELECT rb.recordID FROM recordBlobs rb JOIN records r ON r.zoneID = rb.zoneID AND r.id = rb.recordID
                    WHERE rb.sha256 = ? AND rb.zoneID = ? AND r.payload IS NOT NULL LIMIT 1
                    """, arguments: [StoredKey.blob(blob), zone]).map(StoredKey.recordID)
            }
            return found
        }
    }
}
