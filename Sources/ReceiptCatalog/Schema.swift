import GRDB

/// The catalog's schema, as versioned migrations. `PRAGMA user_version` is set to the number of
/// migrations applied: a catalog with a higher number was written by a newer `receipt` and is refused.
enum Schema {
    static let applicationID: Int32 = 0x5243_5054 // "RCPT"

    static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE settings (
                    key TEXT PRIMARY KEY NOT NULL,
                    value TEXT NOT NULL
                );
                CREATE TABLE zones (
                    name TEXT PRIMARY KEY NOT NULL CHECK (length(name) > 0),
                    owner TEXT,
                    role TEXT NOT NULL DEFAULT 'owner' CHECK (role IN ('owner', 'read', 'write')),
                    shared INTEGER NOT NULL DEFAULT 0 CHECK (shared IN (0, 1)),
                    changeToken TEXT,
                    createdAt INTEGER NOT NULL
                );
                CREATE TABLE blobs (
                    sha256 TEXT PRIMARY KEY NOT NULL CHECK (length(sha256) = 64 AND sha256 NOT GLOB '*[^0-9a-f]*'),
                    size INTEGER NOT NULL CHECK (size >= 0),
                    storedSize INTEGER NOT NULL CHECK (storedSize >= 0),
                    encoding TEXT NOT NULL CHECK (encoding IN ('identity', 'xz')),
                    inline BLOB CHECK (inline IS NULL OR (length(inline) = size AND encoding = 'identity')),
                    createdAt INTEGER NOT NULL
                );
                CREATE TABLE receipts (
                    id TEXT PRIMARY KEY NOT NULL CHECK (length(id) = 36),
                    zone TEXT NOT NULL REFERENCES zones(name) ON UPDATE CASCADE,
                    merchant TEXT,
                    date TEXT CHECK (date IS NULL OR date GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]'),
                    total TEXT CHECK (total IS NULL OR total GLOB '*[0-9]*'),
                    currency TEXT CHECK (currency IS NULL OR length(currency) = 3),
                    category TEXT,
                    note TEXT,
                    tags TEXT NOT NULL DEFAULT '[]',
                    createdAt INTEGER NOT NULL,
                    modifiedAt INTEGER NOT NULL
                );
                CREATE INDEX receipts_by_date ON receipts(date, id);
                CREATE INDEX receipts_by_zone_date ON receipts(zone, date, id);
                CREATE TABLE attachments (
                    receiptID TEXT NOT NULL REFERENCES receipts(id) ON DELETE CASCADE,
                    sha256 TEXT NOT NULL REFERENCES blobs(sha256),
                    filename TEXT NOT NULL,
                    mediaType TEXT NOT NULL,
                    position INTEGER NOT NULL,
                    PRIMARY KEY (receiptID, sha256)
                ) WITHOUT ROWID;
                CREATE INDEX attachments_by_blob ON attachments(sha256);
                CREATE TABLE changes (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    receiptID TEXT NOT NULL,
                    zone TEXT NOT NULL,
                    kind TEXT NOT NULL CHECK (kind IN ('upsert', 'delete')),
                    at INTEGER NOT NULL
                );
                CREATE INDEX changes_by_receipt ON changes(receiptID);
                CREATE TABLE importCache (
                    path TEXT PRIMARY KEY NOT NULL,
                    device INTEGER NOT NULL,
                    inode INTEGER NOT NULL,
                    size INTEGER NOT NULL,
                    mtimeNs INTEGER NOT NULL,
                    sha256 TEXT NOT NULL
                );
                """)
        }
        m.registerMigration("v2-sync") { db in
            // The sync engine's memory of each receipt's last synced version: the server's change tag
            // (a push names it, so a stale push is a conflict) and the content it had (`base`, JSON),
            // the common ancestor of the 3-way merge. NULL base: the last synced version was a deletion.
            try db.execute(sql: """
                CREATE TABLE syncState (
                    receiptID TEXT PRIMARY KEY NOT NULL,
                    zone TEXT NOT NULL,
                    changeTag TEXT NOT NULL,
                    base TEXT
                );
                CREATE INDEX syncState_by_zone ON syncState(zone);
                """)
        }
        m.registerMigration("v3-text-claims") { db in
            // Claims: where a receipt's reimbursement stands. Text: what the extractors read of each
            // blob, once per blob and extractor version. The full-text index is kept by triggers, so
            // every writer (import, edit, sync, fsck's rebuild) keeps it consistent in its own
            // transaction. See "Text and search" in docs/DESIGN.md.
            try db.execute(sql: """
                ALTER TABLE receipts ADD COLUMN status TEXT NOT NULL DEFAULT 'none'
                    CHECK (status IN ('none', 'submitted', 'reimbursed', 'denied'));
                ALTER TABLE receipts ADD COLUMN claim TEXT;
                ALTER TABLE receipts ADD COLUMN reimbursedOn TEXT
                    CHECK (reimbursedOn IS NULL OR reimbursedOn GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]');
                -- No foreign key to blobs: gc's deletion of a blob row stays what it was (no cascade into
                -- the index's triggers), and a text outliving its blob is only reused if the bytes return.
                CREATE TABLE blobText (
                    sha256 TEXT PRIMARY KEY NOT NULL CHECK (length(sha256) = 64),
                    extractor TEXT NOT NULL,
                    state TEXT NOT NULL CHECK (state IN ('text', 'failed')),
                    text TEXT NOT NULL DEFAULT '',
                    error TEXT,
                    extractedAt INTEGER NOT NULL
                ) WITHOUT ROWID;
                """)
            try SearchIndexV3.create(db)
        }
        m.registerMigration("v4-total-index") { db in
            // `receipt search 12.99` looks receipts up by their total: without an index that read the
            // whole receipts table (12 MB, 30-70 ms at 100,000 receipts) on every search with an amount.
            try db.execute(sql: "CREATE INDEX receipts_by_total ON receipts(total)")
        }
        m.registerMigration("v4-search-held") { db in
            // A bulk writer indexes each receipt once, after its attachments, instead of once per row
            // (`SearchIndexV3.heldTriggers`); every other writer keeps the row triggers of v3.
            try SearchIndexV3.heldTriggers(db)
        }
        m.registerMigration("v5-kept-counts") { db in
            // What `stats` and `index` count, kept by triggers (KeptCounts.swift): counting it took a
            // scan of the blob rows and their texts, 0.6 s at a million receipts.
            try KeptCounts.create(db)
        }
        m.registerMigration("v6-attachment-size") { db in
            // Each attachment carries its blob's size, so that `list`, `show` and `search` need not read
            // the blob row for it (a random page of inline bytes per file: 0.1 s of a month's list at a
            // million receipts). The size of an address never changes, so the copy cannot go stale;
            // fsck compares the two (`Catalog.attachmentSizeProblems`).
            try db.execute(sql: "ALTER TABLE attachments ADD COLUMN size INTEGER CHECK (size IS NULL OR size >= 0)")
            try db.execute(sql: Catalog.resizeAttachmentsSQL)
        }
        m.registerMigration("v7-text-offer-index") { db in
            // Each sync offers the server the texts stored since its last offer, in (extractedAt,
            // address) order (`Catalog.textsStored`). Without an index that read every row of
            // `blobText`, texts included, on every sync: 60 % of a one-edit sync at 100,000 receipts
            // with text, and 2.8 GB of reading at a million.
            try db.execute(sql: "CREATE INDEX blobText_by_extractedAt ON blobText(extractor, extractedAt, sha256)")
        }
        m.registerMigration("v8-receipt-rows") { db in
            // Attachments keyed by their receipt's row number: a receipt's files beside those of the
            // receipts imported with it (`ReceiptRows`).
            try ReceiptRows.migrate(db)
        }
        m.registerMigration("v9-readings") { db in
            // What the vault read from receipts' texts and no person has confirmed yet, and what people
            // taught it (Catalog+Readings.swift). New tables only: no row of a v8 catalog changes.
            try db.execute(sql: Catalog.readingsSQL)
        }
        m.registerMigration("v10-text-signatures") { db in
            // `receipt dups`: a signature of each receipt's text and the pairs a person kept as two
            // (Catalog+TextSignatures.swift). New tables only; signatures of texts read before are
            // made when `dups` first runs.
            try db.execute(sql: Catalog.wholeSignaturesSQL + Catalog.keptApartSQL)
        }
        m.registerMigration("v11-search-text-once") { db in
            // The search index reads each receipt's text where the catalog stores it (`SearchIndex`)
            // instead of keeping a copy of it: the index of v3–v10 is dropped and built again from
            // the stored text, in this migration's transaction.
            try SearchIndex.migrate(db)
        }
        m.registerMigration("v12-blob-keys") { db in
            // Blob addresses as their 32 bytes in every table and index (`BlobKeys`), in this one
            // transaction; a catalog holding an address that is no 64 hex digits is refused unchanged.
            try BlobKeys.migrate(db)
        }
        m.registerMigration("v13-plain-text-once") { db in
            // A text that is its blob's own inline bytes is stored once, in the blob's row (`TextOnce`):
            // the rows that are converted in this transaction, the search index kept as it is.
            try TextOnce.migrate(db)
        }
        m.registerMigration(ReceiptIDKeys.identifier) { db in
            // Receipt ids as their 16 bytes in every table and index (`ReceiptIDKeys`), in this one
            // transaction; a catalog holding an id that is no UUID, or one id in two cases, is refused unchanged.
            try ReceiptIDKeys.migrate(db)
        }
        m.registerMigration(SignatureHalves.identifier) { db in
            // Text signatures of 16-bit minima whose bands are indexed slices of the signature itself
            // (`SignatureHalves`), converted from the stored minima in this one transaction.
            try SignatureHalves.migrate(db)
        }
        return m
    }

    /// The version this binary writes and understands.
    static var version: Int { migrator.migrations.count }
}
