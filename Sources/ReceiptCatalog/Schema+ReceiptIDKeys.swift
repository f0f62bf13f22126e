import BlobStore
import GRDB

/// Catalog v14: every receipt id is its 16 bytes (a BLOB), not its 36 characters, in every table and
/// index that holds one (`receipts` and its two date indexes, `attachments`, the outbox `changes`,
/// `syncState`); hex only at the edges (`ReceiptID`'s text: the wire, the manifest, what a person
/// reads). Each id was 37 bytes of a row and of each index entry naming it, now 17. See "Receipt ids
/// as bytes" in docs/DESIGN.md.
///
/// As `BlobKeys`, each table is made again in the migrator's one transaction, its rows copied with
/// their ids converted and their rowids and row numbers kept (the search index, the readings and the
/// kept pairs name receipts by row number; the outbox's `seq` is its order). An id written in upper
/// case by an older pull becomes its canonical lowercase bytes; two ids that would then be one, or
/// a value that is no UUID, are refused before the first change.
enum ReceiptIDKeys {
    static let identifier = "v14-receipt-id-keys"

    /// The tables and their column holding an id, and whether the column is unique.
    static let columns: [(table: String, column: String, unique: Bool)] = [
        ("receipts", "id", true), ("attachments", "receiptID", false), ("changes", "receiptID", false), ("syncState", "receiptID", true),
    ]

    /// The column of an id: 16 bytes and nothing else (a text bound by mistake fails here instead of
    /// never matching).
    static func column(_ name: String, _ constraint: String = "NOT NULL") -> String {
        "\(name) BLOB \(constraint) CHECK (typeof(\(name)) = 'blob' AND length(\(name)) = 16)"
    }

    static let toBytes = ReceiptID.bytesFunction

    static func migrate(_ db: Database) throws {
        try refuseWhatIsNoID(db)
        // AUTOINCREMENT's high-water marks: a dropped table's go with it, and neither a receipt's row
        // number nor an outbox seq may be given again.
        let sequences = try Row.fetchAll(db, sql: "SELECT name, seq FROM sqlite_sequence WHERE name IN ('receipts', 'changes')")
        try Schema.remakingTables(db, with: toBytes) { try makeTables(db) }
        for row in sequences {
            try db.execute(sql: "UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?", arguments: [row[1] as Int64, row[0] as String])
            try db.execute(sql: "INSERT INTO sqlite_sequence(name, seq) SELECT ?, ? WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = ?)",
                           arguments: [row[0] as String, row[1] as Int64, row[0] as String])
        }
    }

    private static func makeTables(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE receiptsV13 (
                rowNumber INTEGER PRIMARY KEY AUTOINCREMENT,
                \(column("id", "NOT NULL UNIQUE")),
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
            INSERT INTO receiptsV13(rowNumber, id, zone, merchant, date, total, currency, category, note, tags, createdAt,
                                    modifiedAt, status, claim, reimbursedOn)
                SELECT rowNumber, receipt_id_bytes(id), zone, merchant, date, total, currency, category, note, tags, createdAt,
                       modifiedAt, status, claim, reimbursedOn
                FROM receipts ORDER BY rowNumber;
            CREATE TABLE attachmentsV13 (
                receiptRow INTEGER NOT NULL REFERENCES receipts(rowNumber) ON DELETE CASCADE,
                \(BlobKeys.column) REFERENCES blobs(sha256),
                \(column("receiptID")),
                filename TEXT NOT NULL,
                mediaType TEXT NOT NULL,
                position INTEGER NOT NULL,
                size INTEGER CHECK (size IS NULL OR size >= 0),
                PRIMARY KEY (receiptRow, sha256)
            ) WITHOUT ROWID;
            INSERT INTO attachmentsV13(receiptRow, sha256, receiptID, filename, mediaType, position, size)
                SELECT receiptRow, sha256, receipt_id_bytes(receiptID), filename, mediaType, position, size
                FROM attachments ORDER BY receiptRow, sha256;
            CREATE TABLE changesV13 (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                \(column("receiptID")),
                zone TEXT NOT NULL,
                kind TEXT NOT NULL CHECK (kind IN ('upsert', 'delete')),
                at INTEGER NOT NULL
            );
            INSERT INTO changesV13(seq, receiptID, zone, kind, at)
                SELECT seq, receipt_id_bytes(receiptID), zone, kind, at FROM changes ORDER BY seq;
            CREATE TABLE syncStateV13 (
                \(column("receiptID", "PRIMARY KEY NOT NULL")),
                zone TEXT NOT NULL,
                changeTag TEXT NOT NULL,
                base TEXT
            );
            INSERT INTO syncStateV13(rowid, receiptID, zone, changeTag, base)
                SELECT rowid, receipt_id_bytes(receiptID), zone, changeTag, base FROM syncState ORDER BY rowid;
            DROP TABLE attachments;
            DROP TABLE receipts;
            DROP TABLE changes;
            DROP TABLE syncState;
            ALTER TABLE receiptsV13 RENAME TO receipts;
            ALTER TABLE attachmentsV13 RENAME TO attachments;
            ALTER TABLE changesV13 RENAME TO changes;
            ALTER TABLE syncStateV13 RENAME TO syncState;
            CREATE INDEX receipts_by_date ON receipts(date, id);
            CREATE INDEX receipts_by_zone_date ON receipts(zone, date, id);
            CREATE INDEX receipts_by_total ON receipts(total);
            CREATE INDEX attachments_by_blob ON attachments(sha256);
            CREATE INDEX changes_by_receipt ON changes(receiptID);
            CREATE INDEX syncState_by_zone ON syncState(zone);
            """)
    }

    /// Refuses, through a read-only connection, a catalog not yet converted that holds what cannot
    /// be converted: the file is left byte for byte as it was.
    static func refuseUnconvertible(at path: String) throws {
        try Schema.refuseReadOnly(at: path, before: identifier, refuseWhatIsNoID)
    }

    /// A value that is no UUID, or two ids that differ only in case where one is allowed: the
    /// migration stops before its first change, naming the table and the value(s).
    static func refuseWhatIsNoID(_ db: Database) throws {
        for (table, column, unique) in columns where try db.tableExists(table) {
            if let bad = try String.fetchOne(db, sql: """
                SELECT quote(\(column)) FROM \(table)
                WHERE typeof(\(column)) <> 'text' OR \(column) NOT GLOB '\(Catalog.uuidPattern)' LIMIT 1
                """) {
                let shown = bad.count > 80 ? bad.prefix(77) + "..." : bad[...]
                throw DatabaseError(resultCode: .SQLITE_CONSTRAINT_CHECK, message:
                    "table \(table) holds the receipt id \(shown), which is no UUID (migration \(identifier))")
            }
            guard unique, let twins = try Row.fetchOne(db, sql: """
                SELECT min(\(column)), max(\(column)) FROM \(table) GROUP BY lower(\(column)) HAVING count(*) > 1 LIMIT 1
                """) else { continue }
            throw DatabaseError(resultCode: .SQLITE_CONSTRAINT_UNIQUE, message:
                "table \(table) holds the receipt ids '\(twins[0] as String)' and '\(twins[1] as String)', one id in two cases (migration \(identifier)): keep one with the version that wrote this catalog")
        }
    }
}

extension Schema {
    /// Makes tables again (`body`) with `function` (a conversion of their keys) at hand: every
    /// trigger and the search index's view name tables made again, so they are dropped before and
    /// made again after, as the current schema writes them.
    static func remakingTables(_ db: Database, with function: DatabaseFunction, _ body: () throws -> Void) throws {
        for name in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'trigger'") {
            try db.execute(sql: "DROP TRIGGER \(name.quotedDatabaseIdentifier)")
        }
        // The text view names blobText and blobs: a table it names cannot be renamed under it.
        try db.execute(sql: "DROP VIEW \(SearchIndex.source); DROP VIEW IF EXISTS \(TextOnce.view)")
        db.add(function: function)
        defer { db.remove(function: function) }
        try body()
        // Made again as the catalog's version has it: before v13 the stored text as it is, from v13
        // the text cut from its blob's inline bytes, with the triggers that keep it.
        let textOnce = try db.columns(in: "blobText").contains { $0.name == "inlineStart" }
        try db.execute(sql: textOnce ? TextOnce.viewSQL + TextOnce.triggersSQL : TextOnce.plainViewSQL)
        let documents = SearchIndex.documents(where: "1")
        try db.execute(sql: "CREATE VIEW \(SearchIndex.source) AS \(documents)")
        try KeptCounts.createTriggers(db, .row)
        try SearchIndex.createTriggers(db)
    }

    /// Runs `check` on the catalog at `path` through a read-only connection unless the migration
    /// `identifier` was applied: a refused catalog is left byte for byte as it was (a writer's first
    /// open adds a page). What a read-only connection cannot do, the migration's own check does.
    static func refuseReadOnly(at path: String, before identifier: String, _ check: (Database) throws -> Void) throws {
        var config = Configuration()
        config.readonly = true
        do {
            let queue = try DatabaseQueue(path: path, configuration: config)
            defer { try? queue.close() }
            try queue.read { db in
                let applied = try db.tableExists("grdb_migrations")
                    ? try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations") : []
                if !applied.contains(identifier) { try check(db) }
            }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            throw CatalogError(code: .unreadable, path: path, detail: error.message ?? "\(error.resultCode)")
        } catch {
            return
        }
    }
}
