import GRDB

/// The counts `receipt stats` (and `receipt index`) report, kept by triggers in the transaction of
/// every change, so that reading them costs the same at a million receipts as at ten. Counting them
/// took a pass over the `blobs` table, whose rows hold the inline bytes, and a join of every
/// attachment with the extracted text: 0.6 s at a million receipts. Triggers rather than the
/// writer's own bookkeeping because rows also change by cascade (a receipt's attachments), by
/// fsck's repair and the catalog rebuild, and by code not written yet: every writer keeps them
/// exact without knowing. fsck compares them with a recount; `--repair` recounts.
///
/// `keptCounts` is one row. `keptTextCounts` counts the referenced blobs (those some attachment
/// names, as `receipt index` sees them) by the extractor version and state of their stored text.
enum KeptCounts {
    /// A blob that no attachment other than `row`'s names (in an AFTER trigger on attachments).
    private static func alone(_ row: String, _ link: AttachmentLink) -> String {
        "NOT EXISTS (SELECT 1 FROM attachments o WHERE o.sha256 = \(row).sha256 AND o.\(link.column) <> \(row).\(link.column))"
    }

    /// A blob that some attachment names.
    private static func referenced(_ sha256: String) -> String {
        "EXISTS (SELECT 1 FROM attachments o WHERE o.sha256 = \(sha256))"
    }

    /// Adds `delta` to the text count of `row`'s blob (its extractor and state), creating the count.
    private static func addText(of row: String, _ delta: Int) -> String {
        """
        INSERT INTO keptTextCounts(extractor, state, blobs) VALUES (\(row).extractor, \(row).state, \(delta))
            ON CONFLICT(extractor, state) DO UPDATE SET blobs = blobs + \(delta);
        """
    }

    /// Adds `delta` to the text count of the stored text of blob `sha256`, if it has one.
    private static func addText(ofBlob sha256: String, _ delta: Int) -> String {
        """
        INSERT INTO keptTextCounts(extractor, state, blobs)
            SELECT t.extractor, t.state, \(delta) FROM blobText t WHERE t.sha256 = \(sha256)
            ON CONFLICT(extractor, state) DO UPDATE SET blobs = blobs + \(delta);
        """
    }

    private static func blobTerms(_ row: String, _ sign: String) -> String {
        """
        blobs = blobs \(sign) 1, externalBlobs = externalBlobs \(sign) (\(row).inline IS NULL),
        inlineBlobs = inlineBlobs \(sign) (\(row).inline IS NOT NULL),
        logicalBytes = logicalBytes \(sign) \(row).size, storedBytes = storedBytes \(sign) \(row).storedSize
        """
    }

    static func create(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE keptCounts (
                one INTEGER PRIMARY KEY CHECK (one = 1),
                receipts INTEGER NOT NULL DEFAULT 0,
                attachments INTEGER NOT NULL DEFAULT 0,
                blobs INTEGER NOT NULL DEFAULT 0,
                externalBlobs INTEGER NOT NULL DEFAULT 0,
                inlineBlobs INTEGER NOT NULL DEFAULT 0,
                logicalBytes INTEGER NOT NULL DEFAULT 0,
                storedBytes INTEGER NOT NULL DEFAULT 0,
                referencedBlobs INTEGER NOT NULL DEFAULT 0
            );
            INSERT INTO keptCounts(one) VALUES (1);
            CREATE TABLE keptTextCounts (
                extractor TEXT NOT NULL,
                state TEXT NOT NULL,
                blobs INTEGER NOT NULL,
                PRIMARY KEY (extractor, state)
            ) WITHOUT ROWID;
            """)
        try createTriggers(db, .id)
        try recount(db)
    }

    /// The triggers that keep the counts, for catalogs whose attachments name their receipt by `link`
    /// (v5–v7: id; v8: row, `ReceiptRows`).
    static func createTriggers(_ db: Database, _ link: AttachmentLink) throws {
        try db.execute(sql: """
            CREATE TRIGGER kept_receipt_insert AFTER INSERT ON receipts BEGIN
                UPDATE keptCounts SET receipts = receipts + 1;
            END;
            CREATE TRIGGER kept_receipt_delete AFTER DELETE ON receipts BEGIN
                UPDATE keptCounts SET receipts = receipts - 1;
            END;
            CREATE TRIGGER kept_blob_insert AFTER INSERT ON blobs BEGIN
                UPDATE keptCounts SET \(blobTerms("new", "+"));
            END;
            CREATE TRIGGER kept_blob_delete AFTER DELETE ON blobs BEGIN
                UPDATE keptCounts SET \(blobTerms("old", "-"));
            END;
            CREATE TRIGGER kept_blob_update AFTER UPDATE OF size, storedSize, inline ON blobs BEGIN
                UPDATE keptCounts SET \(blobTerms("old", "-"));
                UPDATE keptCounts SET \(blobTerms("new", "+"));
            END;
            -- An import's common case in one statement: the blob's first reference, with no text yet.
            CREATE TRIGGER kept_attachment_insert AFTER INSERT ON attachments BEGIN
                UPDATE keptCounts SET attachments = attachments + 1, referencedBlobs = referencedBlobs + \(alone("new", link));
            END;
            CREATE TRIGGER kept_attachment_first AFTER INSERT ON attachments
            WHEN EXISTS (SELECT 1 FROM blobText t WHERE t.sha256 = new.sha256) AND \(alone("new", link)) BEGIN
                \(addText(ofBlob: "new.sha256", 1))
            END;
            CREATE TRIGGER kept_attachment_delete AFTER DELETE ON attachments BEGIN
                UPDATE keptCounts SET attachments = attachments - 1;
            END;
            CREATE TRIGGER kept_attachment_last AFTER DELETE ON attachments WHEN NOT \(referenced("old.sha256")) BEGIN
                UPDATE keptCounts SET referencedBlobs = referencedBlobs - 1;
                \(addText(ofBlob: "old.sha256", -1))
            END;
            CREATE TRIGGER kept_attachment_moved_from AFTER UPDATE OF sha256 ON attachments
            WHEN old.sha256 <> new.sha256 AND NOT \(referenced("old.sha256")) BEGIN
                UPDATE keptCounts SET referencedBlobs = referencedBlobs - 1;
                \(addText(ofBlob: "old.sha256", -1))
            END;
            CREATE TRIGGER kept_attachment_moved_to AFTER UPDATE OF sha256 ON attachments
            WHEN old.sha256 <> new.sha256 AND \(alone("new", link)) BEGIN
                UPDATE keptCounts SET referencedBlobs = referencedBlobs + 1;
                \(addText(ofBlob: "new.sha256", 1))
            END;
            CREATE TRIGGER kept_text_insert AFTER INSERT ON blobText WHEN \(referenced("new.sha256")) BEGIN
                \(addText(of: "new", 1))
            END;
            CREATE TRIGGER kept_text_delete AFTER DELETE ON blobText WHEN \(referenced("old.sha256")) BEGIN
                \(addText(of: "old", -1))
            END;
            CREATE TRIGGER kept_text_update_old AFTER UPDATE OF sha256, extractor, state ON blobText
            WHEN \(referenced("old.sha256")) BEGIN
                \(addText(of: "old", -1))
            END;
            CREATE TRIGGER kept_text_update_new AFTER UPDATE OF sha256, extractor, state ON blobText
            WHEN \(referenced("new.sha256")) BEGIN
                \(addText(of: "new", 1))
            END;
            """)
    }

    /// The counts as a scan of the catalog finds them (the migration of an older catalog, fsck).
    /// `text: false` leaves the text counts out (empty): counting them reads every row of `blobText`.
    static func recounted(_ db: Database, text countText: Bool = true) throws -> (CatalogCounts, referencedBlobs: Int, text: [String: Int]) {
        let row = try Row.fetchOne(db, sql: """
            SELECT (SELECT count(*) FROM receipts), (SELECT count(*) FROM attachments), count(*),
                   coalesce(sum(inline IS NULL), 0), coalesce(sum(inline IS NOT NULL), 0),
                   coalesce(sum(size), 0), coalesce(sum(storedSize), 0),
                   (SELECT count(DISTINCT sha256) FROM attachments)
            FROM blobs
            """)
        let counts = CatalogCounts(receipts: row?[0] ?? 0, attachments: row?[1] ?? 0, blobs: row?[2] ?? 0,
                                   externalBlobs: row?[3] ?? 0, inlineBlobs: row?[4] ?? 0, logicalBytes: row?[5] ?? 0,
                                   storedBytes: row?[6] ?? 0)
        var text: [String: Int] = [:]
        guard countText else { return (counts, row?[7] ?? 0, text) }
        for r in try Row.fetchAll(db, sql: """
            SELECT t.extractor, t.state, count(*) FROM blobText t WHERE \(referenced("t.sha256")) GROUP BY 1, 2
            """) {
            text[textKey(r[0], r[1])] = r[2]
        }
        return (counts, row?[7] ?? 0, text)
    }

    /// The kept counts.
    static func kept(_ db: Database) throws -> (CatalogCounts, referencedBlobs: Int, text: [String: Int]) {
        let row = try Row.fetchOne(db, sql: """
            SELECT receipts, attachments, blobs, externalBlobs, inlineBlobs, logicalBytes, storedBytes, referencedBlobs
            FROM keptCounts WHERE one = 1
            """)
        let counts = CatalogCounts(receipts: row?[0] ?? 0, attachments: row?[1] ?? 0, blobs: row?[2] ?? 0,
                                   externalBlobs: row?[3] ?? 0, inlineBlobs: row?[4] ?? 0, logicalBytes: row?[5] ?? 0,
                                   storedBytes: row?[6] ?? 0)
        var text: [String: Int] = [:]
        for r in try Row.fetchAll(db, sql: "SELECT extractor, state, blobs FROM keptTextCounts WHERE blobs <> 0") {
            text[textKey(r[0], r[1])] = r[2]
        }
        return (counts, row?[7] ?? 0, text)
    }

    static func textKey(_ extractor: String, _ state: String) -> String { "\(state) by extractor '\(extractor)'" }

    /// Sets the kept counts to a recount.
    static func recount(_ db: Database) throws {
        let (c, referencedBlobs, _) = try recounted(db)
        try db.execute(sql: """
            INSERT INTO keptCounts(one, receipts, attachments, blobs, externalBlobs, inlineBlobs, logicalBytes, storedBytes,
                                   referencedBlobs)
            VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(one) DO UPDATE SET receipts = excluded.receipts, attachments = excluded.attachments,
                blobs = excluded.blobs, externalBlobs = excluded.externalBlobs, inlineBlobs = excluded.inlineBlobs,
                logicalBytes = excluded.logicalBytes, storedBytes = excluded.storedBytes,
                referencedBlobs = excluded.referencedBlobs
            """, arguments: [c.receipts, c.attachments, c.blobs, c.externalBlobs, c.inlineBlobs, c.logicalBytes,
                             c.storedBytes, referencedBlobs])
        try db.execute(sql: """
            DELETE FROM keptTextCounts;
            INSERT INTO keptTextCounts(extractor, state, blobs)
                SELECT t.extractor, t.state, count(*) FROM blobText t WHERE \(referenced("t.sha256")) GROUP BY 1, 2;
            """)
    }
}

extension Catalog {
    /// The counts `receipt stats` shows (kept by the catalog: no scan).
    public static func counts(_ db: Database) throws -> CatalogCounts {
        try KeptCounts.kept(db).0
    }

    /// How far text extraction has come for `version` (kept by the catalog: no scan).
    public static func textCounts(_ db: Database, version: String) throws -> TextCounts {
        let row = try Row.fetchOne(db, sql: """
            SELECT coalesce(sum(t.blobs), 0), coalesce(sum(t.blobs) FILTER (WHERE t.state = 'failed'), 0), k.referencedBlobs
            FROM keptCounts k LEFT JOIN keptTextCounts t ON t.extractor = ? WHERE k.one = 1
            """, arguments: [version])
        let indexed: Int = row?[0] ?? 0
        return TextCounts(indexed: indexed, failed: row?[1] ?? 0, pending: (row?[2] ?? 0) - indexed)
    }

    /// Where the kept counts differ from a recount, one phrase each ("receipts: kept 5, counted 6");
    /// empty when they agree (fsck).
    /// `quick`: the counts of extracted texts are not compared (fsck --quick leaves the derived
    /// tables to the full check; their recount reads all of the text).
    public func keptCountProblems(quick: Bool = false) throws -> [String] {
        try read { db in
            let (kept, keptReferenced, keptText) = try KeptCounts.kept(db)
            let (counted, countedReferenced, countedText) = try KeptCounts.recounted(db, text: !quick)
            var out: [String] = []
            func compare<T: Equatable>(_ name: String, _ k: T, _ c: T) {
                if k != c { out.append("\(name): kept \(k), counted \(c)") }
            }
            compare("receipts", kept.receipts, counted.receipts)
            compare("attachments", kept.attachments, counted.attachments)
            compare("blobs", kept.blobs, counted.blobs)
            compare("external blobs", kept.externalBlobs, counted.externalBlobs)
            compare("inline blobs", kept.inlineBlobs, counted.inlineBlobs)
            compare("logical bytes", kept.logicalBytes, counted.logicalBytes)
            compare("stored bytes", kept.storedBytes, counted.storedBytes)
            compare("referenced blobs", keptReferenced, countedReferenced)
            for key in quick ? [] : Set(keptText.keys).union(countedText.keys).sorted() {
                compare("texts \(key)", keptText[key] ?? 0, countedText[key] ?? 0)
            }
            return out
        }
    }

    /// Sets the kept counts to a recount (`fsck --repair`).
    public func recountKeptCounts() throws {
        try write { db in try KeptCounts.recount(db) }
    }
}
