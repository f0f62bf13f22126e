import GRDB

/// Catalog v13: a text that is its blob's own bytes is stored once. A small plain-text receipt's
/// bytes are inline in `blobs.inline` (identity encoding) and the text/plain extractor's text of
/// them is the same bytes, trimmed of the whitespace around them: `blobText` held them a second time
/// (2.8 GB of a 7 GB catalog at a million receipts). Such a row records where in the blob's bytes
/// its text is (`inlineStart`, `inlineLength`, with `text = ''`: CHECK), and every reader reads
/// the text through the view `blobTextRead`, which cuts it from the blob's row: the search index's
/// documents (so FTS5's documents, snippets and highlights are the same strings), `show --text`,
/// the texts a sync uploads, duplicate signatures.
///
/// The view's text of a row must never change behind the search index's back (FTS5's 'delete' needs
/// the exact document it indexed): a blob row whose inline bytes change or go (fsck recording them
/// as a file of the blob tree, gc deleting an unreferenced row) first gives the text back to
/// `blobText`, in the same statement (triggers `blobText_keeps_*`), so a row with a range always
/// has its blob's inline bytes to read. Texts of blobs in the blob tree or compressed, and texts
/// that are not a run of their blob's bytes (OCR, PDF, invalid UTF-8 replaced), stay in `blobText`.
enum TextOnce {
    static let view = "blobTextRead"

    /// The view before v13 (v11 and v12 make it): the stored text as it is.
    static let plainViewSQL = """
        CREATE VIEW \(view) AS SELECT sha256, extractor, state, text, error, extractedAt FROM blobText;
        """

    static let viewSQL = """
        CREATE VIEW \(view) AS SELECT t.sha256 AS sha256, t.extractor AS extractor, t.state AS state,
            CASE WHEN t.inlineStart IS NULL THEN t.text
                 ELSE (SELECT CAST(substr(b.inline, t.inlineStart + 1, t.inlineLength) AS TEXT) FROM blobs b WHERE b.sha256 = t.sha256) END AS text,
            t.error AS error, t.extractedAt AS extractedAt
        FROM blobText t;
        """

    /// Before a blob row's inline bytes change or go, a text cut from them is stored in its row again.
    static let giveBack = """
        UPDATE blobText SET text = CAST(substr(old.inline, inlineStart + 1, inlineLength) AS TEXT), inlineStart = NULL, inlineLength = NULL
        WHERE sha256 = old.sha256 AND inlineStart IS NOT NULL;
        """
    static let triggersSQL = """
        CREATE TRIGGER blobText_keeps_inline_update BEFORE UPDATE OF inline ON blobs WHEN old.inline IS NOT new.inline BEGIN
            \(giveBack)
        END;
        CREATE TRIGGER blobText_keeps_inline_delete BEFORE DELETE ON blobs BEGIN
            \(giveBack)
        END;
        """

    /// Where a text's bytes first are in the inline bytes of its blob (1-based; 0 or NULL: not there).
    static func found(text: String, blob: String) -> String {
        "(SELECT instr(b.inline, CAST(\(text) AS BLOB)) FROM blobs b WHERE b.sha256 = \(blob))"
    }

    /// Stores a text (nil: the extractor failed), as a range of its blob's inline bytes when it is one.
    static let storeSQL = """
        INSERT INTO blobText(sha256, extractor, state, text, error, extractedAt, inlineStart, inlineLength)
        SELECT ?1, ?2, ?3, CASE WHEN at > 0 THEN '' ELSE ?4 END, ?5, ?6,
               CASE WHEN at > 0 THEN at - 1 END, CASE WHEN at > 0 THEN length(CAST(?4 AS BLOB)) END
        FROM (SELECT CASE WHEN ?3 = 'text' AND ?4 != '' THEN \(found(text: "?4", blob: "?1")) END AS at) WHERE 1
        ON CONFLICT(sha256) DO UPDATE SET extractor = excluded.extractor, state = excluded.state, text = excluded.text,
            error = excluded.error, extractedAt = excluded.extractedAt,
            inlineStart = excluded.inlineStart, inlineLength = excluded.inlineLength
        """

    /// Catalog v13, in the migrator's one transaction. The documents stay the same strings, so the
    /// search index is kept: its triggers are dropped while the rows change and made again after.
    static func migrate(_ db: Database) throws {
        for name in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name GLOB 'receiptSearch_*'") {
            try db.execute(sql: "DROP TRIGGER \(name.quotedDatabaseIdentifier)")
        }
        try db.execute(sql: """
            DROP VIEW \(SearchIndex.source);
            DROP VIEW IF EXISTS \(view);
            ALTER TABLE blobText ADD COLUMN inlineStart INTEGER CHECK (inlineStart IS NULL OR inlineStart >= 0);
            ALTER TABLE blobText ADD COLUMN inlineLength INTEGER CHECK ((inlineLength IS NULL) = (inlineStart IS NULL)
                AND (inlineLength IS NULL OR (inlineLength > 0 AND state = 'text' AND text = '')));
            UPDATE blobText SET inlineStart = \(found(text: "text", blob: "blobText.sha256")) - 1,
                                inlineLength = length(CAST(text AS BLOB)), text = ''
            WHERE state = 'text' AND text != '' AND \(found(text: "text", blob: "blobText.sha256")) > 0;
            \(viewSQL)
            \(triggersSQL)
            CREATE VIEW \(SearchIndex.source) AS \(SearchIndex.documents(where: "1"));
            """)
        try SearchIndex.createTriggers(db)
    }
}
