import GRDB

/// The full-text index of receipts: one FTS5 row per receipt (rowid = its row number) over its
/// merchant, category, note, tags, claim reference, attachment file names and the extracted text of
/// its attachments. `unicode61 remove_diacritics 2` folds case and diacritics ("cafe" finds "Café").
///
/// The index holds no copy of the text (catalog v11): it is an external-content table whose content
/// is the view `receiptSearchSource`, which makes each receipt's document from `receipts`,
/// `attachments` and `blobText`; snippets read the text through it. Until v10 FTS5 kept its own copy
/// (`SearchIndexV3`), 30 % of a catalog with text. Triggers keep the index in the writer's own
/// transaction, as before: a receipt deleted is gone from search when its deletion commits.
///
/// FTS5 removes a document from an external-content index only when given the values it was indexed
/// with ('delete'): a wrong value corrupts the index. So every change removes a receipt's document as
/// it still is, before the change (`forget`: BEFORE UPDATE and DELETE triggers; after an INSERT, the
/// document without the new row, as SQLite fires BEFORE INSERT triggers even for an insert its
/// conflict clause turns into an update or nothing), and indexes it as it is after. A document is
/// the same string each time it is made: its files and texts are concatenated in the attachments'
/// key order (address within the receipt), the only way the query below can read them.
enum SearchIndex {
    static let table = "receiptSearch"
    static let source = "receiptSearchSource"
    static let columns = "merchant, category, note, tags, claim, files, body"

    /// A row to leave out of the documents: an attachment or a text just inserted, to make the
    /// document the receipt was indexed with before it.
    enum Leaving {
        case nothing
        case attachment(String)
        case text(String)

        var attachment: String { if case .attachment(let sha) = self { return " AND a.sha256 != \(sha)" } else { return "" } }
        var text: String { if case .text(let sha) = self { return " AND t.sha256 != \(sha)" } else { return "" } }
    }

    /// The documents (row number and the index's columns) of the receipts `r` matching `condition`.
    /// CROSS JOIN: the attachments first, in key order, then each one's text.
    static func documents(where condition: String, leaving: Leaving = .nothing) -> String {
        """
        SELECT r.rowNumber AS rowNumber, r.merchant AS merchant, r.category AS category, r.note AS note,
               r.tags AS tags, r.claim AS claim,
               (SELECT group_concat(a.filename, ' ') FROM attachments a WHERE a.receiptRow = r.rowNumber\(leaving.attachment)) AS files,
               (SELECT group_concat(t.text, ' ') FROM attachments a CROSS JOIN \(TextOnce.view) t ON t.sha256 = a.sha256
                WHERE a.receiptRow = r.rowNumber AND t.state = 'text'\(leaving.attachment)\(leaving.text)) AS body
        FROM receipts r WHERE \(condition)
        """
    }

    /// Indexes the documents of the receipts matching `condition`.
    static func index(where condition: String) -> String {
        "INSERT INTO receiptSearch(rowid, \(columns)) \(documents(where: condition));"
    }

    /// Removes from the index the documents of the receipts matching `condition`, as they are now
    /// (less `leaving`); not those of receipts a held writer noted, whose documents went at its first touch.
    static func forget(where condition: String, leaving: Leaving = .nothing) -> String {
        """
        INSERT INTO receiptSearch(receiptSearch, rowid, \(columns)) SELECT 'delete', * FROM (\(documents(
            where: "(\(condition)) AND r.rowNumber NOT IN (SELECT receipt FROM searchPending)", leaving: leaving)));
        """
    }

    static let held = "EXISTS (SELECT 1 FROM searchHold)"

    /// Before a change to the receipts matching `condition`: their documents go. A held writer notes
    /// them too, to index them once before it commits (`flushPending`). No `OR IGNORE`: in a trigger
    /// the conflict clause of the statement that fired it (an upsert's) replaces it.
    static func touch(_ condition: String, leaving: Leaving = .nothing) -> String {
        """
        \(forget(where: condition, leaving: leaving))
        INSERT INTO searchPending(receipt) SELECT r.rowNumber FROM receipts r
            WHERE (\(condition)) AND \(held) AND r.rowNumber NOT IN (SELECT receipt FROM searchPending);
        """
    }

    /// After a change: the receipts' documents as they are now, unless a writer holds the index.
    static func reindex(_ condition: String) -> String {
        index(where: "(\(condition)) AND NOT \(held)")
    }

    /// Catalog v11: the index of v3–v10 and its triggers give way to this one, built from the stored text.
    static func migrate(_ db: Database) throws {
        for name in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name GLOB 'receiptSearch_*'") {
            try db.execute(sql: "DROP TRIGGER \"\(name)\"")
        }
        try db.execute(sql: """
            DROP TABLE receiptSearch;
            DROP TABLE searchPending;
            CREATE TABLE searchPending (receipt INTEGER PRIMARY KEY);
            DELETE FROM searchHold;
            DROP VIEW IF EXISTS \(TextOnce.view);
            \(TextOnce.plainViewSQL)
            CREATE VIEW receiptSearchSource AS \(documents(where: "1"));
            CREATE VIRTUAL TABLE receiptSearch USING fts5(
                \(columns), content = '\(source)', content_rowid = 'rowNumber',
                tokenize = 'unicode61 remove_diacritics 2');
            """)
        try createTriggers(db)
        try rebuild(db)
    }

    /// The triggers that keep the index. A writer that holds the index (a row in `searchHold`, in its
    /// own transaction: `CatalogWriter.holdingSearchIndex`) has each receipt it changes removed from
    /// the index at its first change and indexed once, after all its rows (`flushPending`): a bulk
    /// writer's receipt was otherwise indexed when inserted, then removed and indexed again for each
    /// attachment, and the import of 100,000 rows took 2.6 times as long.
    static func createTriggers(_ db: Database) throws {
        let attachment = "r.rowNumber IN (old.receiptRow, new.receiptRow)"
        func holding(_ sha: String) -> String { "r.rowNumber IN (SELECT receiptRow FROM attachments WHERE sha256 = \(sha))" }
        try db.execute(sql: """
            CREATE TRIGGER receiptSearch_receipt_insert AFTER INSERT ON receipts BEGIN
                \(reindex("r.rowNumber = new.rowNumber"))
                INSERT INTO searchPending(receipt) SELECT new.rowNumber WHERE \(held);
            END;
            CREATE TRIGGER receiptSearch_receipt_before_update BEFORE UPDATE OF merchant, category, note, tags, claim ON receipts BEGIN
                \(touch("r.rowNumber = old.rowNumber"))
            END;
            CREATE TRIGGER receiptSearch_receipt_update AFTER UPDATE OF merchant, category, note, tags, claim ON receipts BEGIN
                \(reindex("r.rowNumber = new.rowNumber"))
            END;
            -- A deletion is never held: the receipt's document goes at once (none, for one new in this transaction).
            CREATE TRIGGER receiptSearch_receipt_delete BEFORE DELETE ON receipts BEGIN
                \(forget(where: "r.rowNumber = old.rowNumber"))
                DELETE FROM searchPending WHERE receipt = old.rowNumber;
            END;
            CREATE TRIGGER receiptSearch_attachment_insert AFTER INSERT ON attachments BEGIN
                \(touch("r.rowNumber = new.receiptRow", leaving: .attachment("new.sha256")))
                \(reindex("r.rowNumber = new.receiptRow"))
            END;
            CREATE TRIGGER receiptSearch_attachment_before_update BEFORE UPDATE OF receiptRow, filename, sha256 ON attachments BEGIN
                \(touch(attachment))
            END;
            CREATE TRIGGER receiptSearch_attachment_update AFTER UPDATE OF receiptRow, filename, sha256 ON attachments BEGIN
                \(reindex(attachment))
            END;
            CREATE TRIGGER receiptSearch_attachment_before_delete BEFORE DELETE ON attachments BEGIN
                \(touch("r.rowNumber = old.receiptRow"))
            END;
            CREATE TRIGGER receiptSearch_attachment_delete AFTER DELETE ON attachments BEGIN
                \(reindex("r.rowNumber = old.receiptRow"))
            END;
            CREATE TRIGGER receiptSearch_text_insert AFTER INSERT ON blobText BEGIN
                \(touch(holding("new.sha256"), leaving: .text("new.sha256")))
                \(reindex(holding("new.sha256")))
            END;
            CREATE TRIGGER receiptSearch_text_before_update BEFORE UPDATE OF sha256, text, state ON blobText BEGIN
                \(touch("\(holding("old.sha256")) OR \(holding("new.sha256"))"))
            END;
            CREATE TRIGGER receiptSearch_text_update AFTER UPDATE OF sha256, text, state ON blobText BEGIN
                \(reindex("\(holding("old.sha256")) OR \(holding("new.sha256"))"))
            END;
            CREATE TRIGGER receiptSearch_text_before_delete BEFORE DELETE ON blobText BEGIN
                \(touch(holding("old.sha256")))
            END;
            CREATE TRIGGER receiptSearch_text_delete AFTER DELETE ON blobText BEGIN
                \(reindex(holding("old.sha256")))
            END;
            """)
    }

    /// Builds the whole index again from the catalog and the stored texts (`fsck --repair`, migration v11).
    static func rebuild(_ db: Database) throws {
        try db.execute(sql: """
            DELETE FROM searchPending;
            DELETE FROM searchHold;
            INSERT INTO receiptSearch(receiptSearch) VALUES ('rebuild');
            """)
    }

    /// Indexes the receipts the held triggers noted (their documents went at their first change),
    /// each once, and lets the index go: run by the holder before its transaction commits.
    static let flushPending = """
        \(index(where: "r.rowNumber IN (SELECT receipt FROM searchPending)"))
        DELETE FROM searchPending;
        DELETE FROM searchHold;
        """
}

extension CatalogWriter {
    /// Runs `body` (many rows of one transaction) with the search index held: each receipt it
    /// inserts or changes is indexed once at the end, in the same transaction, instead of once per
    /// row (see `SearchIndex.createTriggers`). If `body` throws, the index is brought up to date all
    /// the same, so a caller that goes on in this transaction finds it consistent.
    public func holdingSearchIndex<T>(_ body: () throws -> T) throws -> T {
        // A ledgered transaction indexes what it wrote when it settles (its triggers are suspended).
        if ledger != nil { return try body() }
        try db.execute(sql: "INSERT INTO searchHold(held) VALUES (1)")
        let result: T
        do {
            result = try body()
        } catch {
            try? db.execute(sql: SearchIndex.flushPending)
            throw error
        }
        try db.execute(sql: SearchIndex.flushPending)
        return result
    }
}
