import GRDB

/// How an attachment row names its receipt, in the SQL of the triggers and of the search index's
/// documents: catalogs v1–v7 by the receipt's id only; from v8 by the receipt's row number, the
/// attachments' key (`ReceiptRows`).
enum AttachmentLink {
    case id, row

    /// The column of an attachment row that names its receipt.
    var column: String { self == .id ? "receiptID" : "receiptRow" }

    /// The rowid of the receipt of attachment `row` (`new` or `old` in a trigger).
    func receiptRowid(of row: String) -> String {
        switch self {
        case .id: return "(SELECT rowid FROM receipts WHERE id = \(row).receiptID)"
        case .row: return "\(row).receiptRow"
        }
    }

    /// The condition joining attachments `a` to receipts `r`.
    var join: String {
        switch self {
        case .id: return "a.receiptID = r.id"
        case .row: return "a.receiptRow = r.rowNumber"
        }
    }

    /// A query of the rowids (column `receipt`) of the receipts holding blob `sha256` (an SQL expression).
    func receiptRows(ofBlob sha256: String) -> String {
        switch self {
        case .id: return "SELECT rowid AS receipt FROM receipts WHERE id IN (SELECT receiptID FROM attachments WHERE sha256 = \(sha256))"
        case .row: return "SELECT receiptRow AS receipt FROM attachments WHERE sha256 = \(sha256)"
        }
    }
}

/// Catalog v8: receipts get a row number of their own (`rowNumber INTEGER PRIMARY KEY`, the rowid
/// they had), and attachments are keyed by it, `(receiptRow, sha256)`, instead of by the receipt's
/// random id. A receipt's files then sit beside those of the receipts imported with it, as the
/// receipts themselves do: `list` of a month reads a few hundred pages of attachments instead of
/// most of the table (at a million receipts the join took 56 ms, 10 ms so keyed), and an import
/// appends attachments instead of inserting each into a random page (the SQL alone, a million rows:
/// 103 → 82 s). See "Attachments kept beside their receipts" in docs/DESIGN.md.
///
/// The attachments keep the receipt's id beside its row (not indexed): fsck can still name, and
/// its repair recreate, a receipt whose row is gone. The row number must be declared, not the
/// implicit rowid: VACUUM may renumber implicit rowids, which would move files between receipts.
/// And never reused (AUTOINCREMENT): a new receipt given the number of one whose row was lost (to
/// damage, with its files still naming it) would silently take that receipt's files.
enum ReceiptRows {
    static func migrate(_ db: Database) throws {
        // Every trigger names one of the two tables rebuilt here; they are made again below.
        for name in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'trigger'") {
            try db.execute(sql: "DROP TRIGGER \"\(name.replacingOccurrences(of: "\"", with: "\"\""))\"")
        }
        // An attachment whose receipt is gone has no row to be keyed by: refused, never dropped.
        let orphans = try Int.fetchOne(db, sql: "SELECT count(*) FROM attachments WHERE receiptID NOT IN (SELECT id FROM receipts)") ?? 0
        if orphans > 0 {
            throw DatabaseError(resultCode: .SQLITE_CONSTRAINT_FOREIGNKEY, message:
                "\(orphans) attachment(s) name a receipt the catalog does not have: run `receipt fsck --repair` with the version that wrote this catalog")
        }
        try db.execute(sql: """
            CREATE TABLE receiptsV8 (
                rowNumber INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE CHECK (length(id) = 36),
                zone TEXT NOT NULL REFERENCES zones(name) ON UPDATE CASCADE,
                merchant TEXT,
                date TEXT CHECK (date IS NULL OR date GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]'),
                total TEXT CHECK (total IS NULL OR total GLOB '*[0-9]*'),
                currency TEXT CHECK (currency IS NULL OR length(currency) = 3),
                category TEXT,
                note TEXT,
                tags TEXT NOT NULL DEFAULT '[]',
                createdAt INTEGER NOT NULL,
                modifiedAt INTEGER NOT NULL,
                status TEXT NOT NULL DEFAULT 'none' CHECK (status IN ('none', 'submitted', 'reimbursed', 'denied')),
                claim TEXT,
                reimbursedOn TEXT CHECK (reimbursedOn IS NULL OR reimbursedOn GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]')
            );
            INSERT INTO receiptsV8(rowNumber, id, zone, merchant, date, total, currency, category, note, tags, createdAt,
                                   modifiedAt, status, claim, reimbursedOn)
                SELECT rowid, id, zone, merchant, date, total, currency, category, note, tags, createdAt,
                       modifiedAt, status, claim, reimbursedOn
                FROM receipts ORDER BY rowid;
            CREATE TABLE attachmentsV8 (
                receiptRow INTEGER NOT NULL REFERENCES receipts(rowNumber) ON DELETE CASCADE,
                sha256 TEXT NOT NULL REFERENCES blobs(sha256),
                receiptID TEXT NOT NULL,
                filename TEXT NOT NULL,
                mediaType TEXT NOT NULL,
                position INTEGER NOT NULL,
                size INTEGER CHECK (size IS NULL OR size >= 0),
                PRIMARY KEY (receiptRow, sha256)
            ) WITHOUT ROWID;
            INSERT INTO attachmentsV8(receiptRow, sha256, receiptID, filename, mediaType, position, size)
                SELECT r.rowid, a.sha256, a.receiptID, a.filename, a.mediaType, a.position, a.size
                FROM attachments a JOIN receipts r ON r.id = a.receiptID ORDER BY r.rowid, a.sha256;
            DROP TABLE attachments;
            DROP TABLE receipts;
            ALTER TABLE receiptsV8 RENAME TO receipts;
            ALTER TABLE attachmentsV8 RENAME TO attachments;
            CREATE INDEX receipts_by_date ON receipts(date, id);
            CREATE INDEX receipts_by_zone_date ON receipts(zone, date, id);
            CREATE INDEX receipts_by_total ON receipts(total);
            CREATE INDEX attachments_by_blob ON attachments(sha256);
            """)
        // The rowids are kept, so the search index's rows and the kept counts stay as they were.
        try SearchIndexV3.createTriggers(db, .row)
        try KeptCounts.createTriggers(db, .row)
    }
}
