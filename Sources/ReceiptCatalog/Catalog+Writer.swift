import BlobStore
import GRDB

/// A write transaction of the catalog, and the ONLY writer of blob rows (`Catalog+Blobs.swift`) and
/// outbox entries (`Catalog+Outbox.swift`): every blob row is inserted by `insertBlob`, which the
/// vault's ingest path calls after the blob is durable (I1), and every local change of a receipt
/// writes its outbox entry through `recordChange` in the same transaction (I6). See "The ingest
/// path" in docs/DESIGN.md. Per-row statements go through `RowStatements` (SQLite's C API).
public struct CatalogWriter {
    public let db: Database
    /// The time every row this transaction writes carries.
    public let now: Millis
    let statements = RowStatements()
    /// Set in a ledgered transaction (`rowsTransaction(ledgered: true)`): the verbs that add rows note
    /// them here, since the row triggers are suspended.
    let ledger: Ledger?

    init(_ db: Database, now: Millis = nowMillis(), ledger: Ledger? = nil) {
        self.db = db
        self.now = now
        self.ledger = ledger
    }
}

extension Catalog {
    /// One write transaction, through a `CatalogWriter`.
    @discardableResult
    public func transaction<T>(_ body: (CatalogWriter) throws -> T) throws -> T {
        try pool.write { db in try body(CatalogWriter(db)) }
    }

    /// `transaction` for many one-row statements (the ingest path's batches), with SQLite's
    /// statement journals in memory. Every statement on a table with triggers (the search index's)
    /// keeps a journal of the pages it changes, to undo itself alone; past 64 KiB (four of the
    /// catalog's 16 KiB pages) SQLite spilled it to a temporary file: about 15 `pwrite`s a manifest
    /// row. A one-row statement's journal is a few pages, so memory stays flat. Set for the
    /// transaction only: a statement that changes a whole vault (a zone renamed) keeps its journal
    /// on disk.
    ///
    /// `ledgered`: the kept counts and the search index are brought up to date once, before commit,
    /// from what the verbs did, instead of by the row triggers (`Ledger`: no statement journals at
    /// all). For writers that only add rows through the verbs (the ingest path's batches).
    @discardableResult
    public func rowsTransaction<T>(ledgered: Bool = false, _ body: (CatalogWriter) throws -> T) throws -> T {
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
            defer { try? db.execute(sql: "PRAGMA temp_store = DEFAULT") }
            var result: T?
            try db.inTransaction {
                if ledgered {
                    let triggers = try Ledger.suspendTriggers(db)
                    let ledger = Ledger()
                    result = try body(CatalogWriter(db, ledger: ledger))
                    try ledger.settle(db)
                    try Ledger.restore(triggers, db)
                } else {
                    result = try body(CatalogWriter(db))
                }
                return .commit
            }
            guard let result else { throw DatabaseError(resultCode: .SQLITE_INTERNAL, message: "no result") }
            return result
        }
    }
}

extension CatalogWriter {
    /// Inserts a new receipt (its `tags` column given as the JSON text GRDB's Codable records write).
    func insertReceipt(_ r: Receipt, tagsJSON: String) throws {
        // Bound in the order of `Receipt.columnNames`.
        _ = try statements.run(1, Self.insertReceiptSQL, db) {
            $0.receiptID(r.id)
            for text in [r.zone, r.merchant, r.date, r.total, r.currency, r.category, r.note, tagsJSON] { $0.text(text) }
            $0.int(r.createdAt)
            $0.int(r.modifiedAt)
            for text in [r.status, r.claim, r.reimbursedOn] { $0.text(text) }
        }
        ledger?.addedReceipt(r.id, rowid: db.lastInsertedRowID)
    }

    static let insertReceiptSQL =
        "INSERT INTO receipts(\(Receipt.columnNames.joined(separator: ", "))) VALUES (\(placeholders(Receipt.columnNames.count)))"

    /// Attaches a blob (whose row must exist) to a receipt (which must exist); false when the receipt
    /// already holds it. Only the key's conflict is ignored: a missing receipt fails NOT NULL, a missing
    /// blob the foreign key.
    public func insertAttachment(receiptID: ReceiptID, blob: BlobID, size: Int64, filename: String, mediaType: String,
                                 position: Int) throws -> Bool {
        try ledger?.changing(receiptID, db)
        let inserted = try statements.run(2, """
            INSERT INTO attachments(receiptRow, receiptID, sha256, filename, mediaType, position, size)
            VALUES ((SELECT rowNumber FROM receipts WHERE id = ?1), ?1, ?2, ?3, ?4, ?5, ?6)
            ON CONFLICT (receiptRow, sha256) DO NOTHING
            """, db) {
            $0.receiptID(receiptID)
            $0.bytes(blob)
            $0.text(filename)
            $0.text(mediaType)
            $0.int(Int64(position))
            $0.int(size)
        } > 0
        if inserted { ledger?.addedAttachment(receiptID: receiptID, blob: blob) }
        return inserted
    }

    /// The import stat cache entry, so an unchanged file is not hashed again by the next import.
    public func rememberImport(path: String, status: FileStatus, blob: BlobID) throws {
        _ = try statements.run(4, """
            INSERT OR REPLACE INTO importCache(path, device, inode, size, mtimeNs, sha256) VALUES (?, ?, ?, ?, ?, ?)
            """, db) {
            $0.text(path)
            $0.int(Int64(bitPattern: status.device))
            $0.int(Int64(bitPattern: status.inode))
            $0.int(status.size)
            $0.int(status.mtimeNanoseconds)
            $0.bytes(blob)
        }
    }
}
