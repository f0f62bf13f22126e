import GRDB

/// The full-text index as catalogs v3–v10 kept it: an FTS5 table with its own copy of every
/// receipt's fields, file names and texts, kept by triggers. Only the migrations that made it (v3, v4,
/// v8) use this; v11 (`SearchIndex`) drops it for an index that reads its text where it is stored.
enum SearchIndexV3 {
    /// The index's row of the receipts selected by `condition` (on `r`), built from the catalog.
    static func document(where condition: String, _ link: AttachmentLink = .row) -> String {
        """
        INSERT INTO receiptSearch(rowid, merchant, category, note, tags, claim, files, body)
        SELECT r.rowid, r.merchant, r.category, r.note, r.tags, r.claim,
               (SELECT group_concat(a.filename, ' ') FROM attachments a WHERE \(link.join)),
               (SELECT group_concat(t.text, ' ') FROM attachments a JOIN blobText t ON t.sha256 = a.sha256
                WHERE \(link.join) AND t.state = 'text')
        FROM receipts r WHERE \(condition);
        """
    }

    /// The index's row of the receipt of attachment `row` (`new` or `old` in a trigger), made again.
    static func refresh(attachment row: String, _ link: AttachmentLink) -> String {
        """
        DELETE FROM receiptSearch WHERE rowid = \(link.receiptRowid(of: row));
        \(document(where: "r.rowid = \(link.receiptRowid(of: row))", link))
        """
    }

    static func refresh(blob expression: String, _ link: AttachmentLink) -> String {
        """
        DELETE FROM receiptSearch WHERE rowid IN (\(link.receiptRows(ofBlob: expression)));
        \(document(where: "r.rowid IN (\(link.receiptRows(ofBlob: expression)))", link))
        """
    }

    /// The index and its first triggers, as migration v3 made them (`heldTriggers` replaces the triggers).
    static func create(_ db: Database) throws {
        try db.execute(sql: """
            CREATE VIRTUAL TABLE receiptSearch USING fts5(
                merchant, category, note, tags, claim, files, body,
                tokenize = 'unicode61 remove_diacritics 2');
            CREATE TRIGGER receiptSearch_receipt_insert AFTER INSERT ON receipts BEGIN
                \(document(where: "r.id = new.id", .id))
            END;
            CREATE TRIGGER receiptSearch_receipt_update AFTER UPDATE OF merchant, category, note, tags, claim ON receipts BEGIN
                DELETE FROM receiptSearch WHERE rowid = old.rowid;
                \(document(where: "r.id = new.id", .id))
            END;
            CREATE TRIGGER receiptSearch_receipt_delete AFTER DELETE ON receipts BEGIN
                DELETE FROM receiptSearch WHERE rowid = old.rowid;
            END;
            CREATE TRIGGER receiptSearch_attachment_insert AFTER INSERT ON attachments BEGIN
                \(refresh(attachment: "new", .id))
            END;
            CREATE TRIGGER receiptSearch_attachment_update AFTER UPDATE OF filename, sha256 ON attachments BEGIN
                \(refresh(attachment: "old", .id))
                \(refresh(attachment: "new", .id))
            END;
            CREATE TRIGGER receiptSearch_attachment_delete AFTER DELETE ON attachments BEGIN
                \(refresh(attachment: "old", .id))
            END;
            CREATE TRIGGER receiptSearch_text_insert AFTER INSERT ON blobText BEGIN
                \(refresh(blob: "new.sha256", .id))
            END;
            CREATE TRIGGER receiptSearch_text_update AFTER UPDATE OF text, state ON blobText BEGIN
                \(refresh(blob: "new.sha256", .id))
            END;
            CREATE TRIGGER receiptSearch_text_delete AFTER DELETE ON blobText BEGIN
                \(refresh(blob: "old.sha256", .id))
            END;
            """)
        try db.execute(sql: document(where: "1", .id))
    }

    /// The triggers of migration v4: as before, unless a writer holds the index (a row in
    /// `searchHold`, inside its own transaction). Then they only note which receipts changed
    /// (`searchPending`: `fresh` when the receipt itself is new, so it has no row to delete), and the
    /// writer indexes each of them once, after all its rows, before it commits (`flushPending`). A
    /// bulk writer's receipt was otherwise indexed when inserted, then deleted from the index and
    /// indexed again for each attachment: FTS5 tokenizes a row again to delete it, and the import
    /// of 100,000 rows took 2.6 times as long.
    static func heldTriggers(_ db: Database) throws {
        let drops = ["receipt_insert", "receipt_update", "receipt_delete", "attachment_insert", "attachment_update",
                     "attachment_delete", "text_insert", "text_update", "text_delete"]
        try db.execute(sql: """
            CREATE TABLE searchHold (held INTEGER PRIMARY KEY CHECK (held = 1));
            CREATE TABLE searchPending (receipt INTEGER PRIMARY KEY, fresh INTEGER NOT NULL);
            \(drops.map { "DROP TRIGGER receiptSearch_\($0);" }.joined(separator: "\n"))
            """)
        try createTriggers(db, .id)
    }

    /// The held and free triggers of `heldTriggers`, for catalogs whose attachments name their receipt
    /// by `link` (v4–v7: id; v8: row, `ReceiptRows`).
    static func createTriggers(_ db: Database, _ link: AttachmentLink) throws {
        func pending(attachment row: String) -> String {
            // Not for a receipt that is gone (the rowid NULL: the key refuses it).
            "INSERT OR IGNORE INTO searchPending(receipt, fresh) SELECT \(link.receiptRowid(of: row)), 0 WHERE \(link.receiptRowid(of: row)) IS NOT NULL;"
        }
        func pending(blob expression: String) -> String {
            "INSERT OR IGNORE INTO searchPending(receipt, fresh) SELECT receipt, 0 FROM (\(link.receiptRows(ofBlob: expression)));"
        }
        /// The trigger `name` on `event`, as the writer finds the index: free (indexed at once) or held (noted).
        func pair(_ name: String, _ event: String, free body: String, held noted: String) -> String {
            """
            CREATE TRIGGER receiptSearch_\(name) \(event) WHEN NOT EXISTS (SELECT 1 FROM searchHold) BEGIN \(body) END;
            CREATE TRIGGER receiptSearch_\(name)_held \(event) WHEN EXISTS (SELECT 1 FROM searchHold) BEGIN \(noted) END;
            """
        }
        try db.execute(sql: """
            \(pair("receipt_insert", "AFTER INSERT ON receipts", free: document(where: "r.rowid = new.rowid", link),
                   held: "INSERT OR IGNORE INTO searchPending(receipt, fresh) VALUES (new.rowid, 1);"))
            \(pair("receipt_update", "AFTER UPDATE OF merchant, category, note, tags, claim ON receipts",
                   free: "DELETE FROM receiptSearch WHERE rowid = old.rowid; \(document(where: "r.rowid = new.rowid", link))",
                   held: "INSERT OR IGNORE INTO searchPending(receipt, fresh) VALUES (new.rowid, 0);"))
            -- A deletion is never held: the receipt's row goes at once (none, for one new in this transaction).
            CREATE TRIGGER receiptSearch_receipt_delete AFTER DELETE ON receipts BEGIN
                DELETE FROM receiptSearch WHERE rowid = old.rowid;
                DELETE FROM searchPending WHERE receipt = old.rowid;
            END;
            \(pair("attachment_insert", "AFTER INSERT ON attachments", free: refresh(attachment: "new", link),
                   held: pending(attachment: "new")))
            \(pair("attachment_update", "AFTER UPDATE OF filename, sha256 ON attachments",
                   free: refresh(attachment: "old", link) + refresh(attachment: "new", link),
                   held: pending(attachment: "old") + pending(attachment: "new")))
            \(pair("attachment_delete", "AFTER DELETE ON attachments", free: refresh(attachment: "old", link),
                   held: pending(attachment: "old")))
            \(pair("text_insert", "AFTER INSERT ON blobText", free: refresh(blob: "new.sha256", link), held: pending(blob: "new.sha256")))
            \(pair("text_update", "AFTER UPDATE OF text, state ON blobText", free: refresh(blob: "new.sha256", link),
                   held: pending(blob: "new.sha256")))
            \(pair("text_delete", "AFTER DELETE ON blobText", free: refresh(blob: "old.sha256", link), held: pending(blob: "old.sha256")))
            """)
    }
}
