import GRDB

/// The full-text index of receipts: one FTS5 row per receipt (rowid = the receipt's rowid) over its
/// merchant, category, note, tags, claim reference, attachment file names and the extracted text of
/// its attachments. Triggers on `receipts`, `attachments` and `blobText` keep it up to date in the
/// writer's own transaction: a receipt deleted is gone from search when its deletion commits.
/// `unicode61 remove_diacritics 2` folds case and diacritics ("cafe" finds "Café").
enum SearchIndex {
    static let table = "receiptSearch"

    /// The index's row of the receipts selected by `condition` (on `r`), built from the catalog.
    static func document(where condition: String) -> String {
        """
        INSERT INTO receiptSearch(rowid, merchant, category, note, tags, claim, files, body)
        SELECT r.rowid, r.merchant, r.category, r.note, r.tags, r.claim,
               (SELECT group_concat(a.filename, ' ') FROM attachments a WHERE a.receiptID = r.id),
               (SELECT group_concat(t.text, ' ') FROM attachments a JOIN blobText t ON t.sha256 = a.sha256
                WHERE a.receiptID = r.id AND t.state = 'text')
        FROM receipts r WHERE \(condition);
        """
    }

    static func refresh(receiptID expression: String) -> String {
        """
        DELETE FROM receiptSearch WHERE rowid = (SELECT rowid FROM receipts WHERE id = \(expression));
        \(document(where: "r.id = \(expression)"))
        """
    }

    static func refresh(blob expression: String) -> String {
        """
        DELETE FROM receiptSearch WHERE rowid IN
            (SELECT r.rowid FROM receipts r JOIN attachments a ON a.receiptID = r.id WHERE a.sha256 = \(expression));
        \(document(where: "r.id IN (SELECT receiptID FROM attachments WHERE sha256 = \(expression))"))
        """
    }

    static func create(_ db: Database) throws {
        try db.execute(sql: """
            CREATE VIRTUAL TABLE receiptSearch USING fts5(
                merchant, category, note, tags, claim, files, body,
                tokenize = 'unicode61 remove_diacritics 2');
            CREATE TRIGGER receiptSearch_receipt_insert AFTER INSERT ON receipts BEGIN
                \(document(where: "r.id = new.id"))
            END;
            CREATE TRIGGER receiptSearch_receipt_update AFTER UPDATE OF merchant, category, note, tags, claim ON receipts BEGIN
                DELETE FROM receiptSearch WHERE rowid = old.rowid;
                \(document(where: "r.id = new.id"))
            END;
            CREATE TRIGGER receiptSearch_receipt_delete AFTER DELETE ON receipts BEGIN
                DELETE FROM receiptSearch WHERE rowid = old.rowid;
            END;
            CREATE TRIGGER receiptSearch_attachment_insert AFTER INSERT ON attachments BEGIN
                \(refresh(receiptID: "new.receiptID"))
            END;
            CREATE TRIGGER receiptSearch_attachment_update AFTER UPDATE OF filename, sha256 ON attachments BEGIN
                \(refresh(receiptID: "old.receiptID"))
                \(refresh(receiptID: "new.receiptID"))
            END;
            CREATE TRIGGER receiptSearch_attachment_delete AFTER DELETE ON attachments BEGIN
                \(refresh(receiptID: "old.receiptID"))
            END;
            CREATE TRIGGER receiptSearch_text_insert AFTER INSERT ON blobText BEGIN
                \(refresh(blob: "new.sha256"))
            END;
            CREATE TRIGGER receiptSearch_text_update AFTER UPDATE OF text, state ON blobText BEGIN
                \(refresh(blob: "new.sha256"))
            END;
            CREATE TRIGGER receiptSearch_text_delete AFTER DELETE ON blobText BEGIN
                \(refresh(blob: "old.sha256"))
            END;
            """)
        try rebuild(db)
    }

    /// Builds the whole index again from the catalog (`fsck --repair`, and the migration of an older catalog).
    static func rebuild(_ db: Database) throws {
        try db.execute(sql: "DELETE FROM receiptSearch")
        try db.execute(sql: document(where: "1"))
    }
}
