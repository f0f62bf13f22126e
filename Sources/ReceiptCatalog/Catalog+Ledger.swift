import BlobStore
import GRDB

/// The bookkeeping of a bulk transaction (the ingest path's batches of new receipts), done by the
/// writer once per transaction instead of by the row triggers once per row.
///
/// Why: a table with a trigger makes each INSERT on it a statement SQLite may have to undo alone, so
/// every one-row INSERT keeps a statement journal — a copy of each 16 KiB page it changes, in 1 KiB
/// chunks — whatever its conflict clause: a CHECK that calls a function (`length`, `GLOB`), an
/// immediate foreign key, or a trigger writing the full-text index each require it. The kept counts
/// and the search index's triggers on `receipts`, `attachments` and `blobs` made the manifest import
/// of 100,000 rows twice as slow in SQL (9.5 s against 4.8 s without them, same rows; tools/bench
/// "manifest import"). So a ledgered transaction drops those triggers, writes its rows, adds up what
/// they changed here, applies it in a few statements, and creates the triggers again from their own
/// text before it commits: the same transaction, so a crash or an error rolls the drop back with
/// everything else, and every other writer (and every verb outside a ledger) still has the
/// triggers. fsck compares the kept counts with a recount (`keptCountProblems`), and
/// KeptStatsTests checks both ways of keeping them against one.
///
/// Only the verbs that add rows note what they did (`insertBlob`, `insertReceipt`,
/// `insertAttachment`, `updateReceipt`); a verb that deletes or replaces rows refuses to run in a
/// ledgered transaction (`CatalogWriter.requireTriggers`).
final class Ledger {
    private var counts = CatalogCounts()
    /// Blob rows this transaction inserted: no attachment named them before it.
    private var newBlobs = Set<BlobID>()
    /// The attachments this transaction added, per blob.
    private var attached: [BlobID: Int] = [:]
    /// Receipts to index before commit: rowid → whether the receipt is new (it has no index row yet).
    private var pending: [Int64: Bool] = [:]
    /// The rowids of the receipts this transaction inserted, and how many: SQLite gives a new row
    /// the largest rowid plus one, so they are usually one range, indexed by one statement.
    private var fresh: (first: Int64, last: Int64, count: Int)?
    /// The receipt inserted last: an attachment to it (an import's common case) changes no document.
    private var lastAdded: ReceiptID?

    /// The tables whose triggers a ledgered transaction replaces.
    static let tables = ["receipts", "attachments", "blobs"]

    func addedBlob(_ blob: DurableBlob) {
        counts.blobs += 1
        if blob.inline == nil { counts.externalBlobs += 1 } else { counts.inlineBlobs += 1 }
        counts.logicalBytes += blob.size
        counts.storedBytes += blob.storedSize
        newBlobs.insert(blob.id)
    }

    func addedReceipt(_ id: ReceiptID, rowid: Int64) {
        counts.receipts += 1
        pending[rowid] = true
        lastAdded = id
        if let range = fresh {
            fresh = (min(range.first, rowid), max(range.last, rowid), range.count + 1)
        } else {
            fresh = (rowid, rowid, 1)
        }
    }

    /// Before the receipt's indexed fields or attachments change: a receipt indexed before this
    /// transaction loses its document while the index can still be told what it was (the index holds
    /// no copy: `SearchIndex`), and is indexed again when the transaction settles.
    func changing(_ id: ReceiptID, _ db: Database) throws {
        if id == lastAdded { return }
        guard let rowid = try Int64.fetchOne(db.cachedStatement(sql: "SELECT rowNumber FROM receipts WHERE id = ?"), arguments: [id]),
              pending[rowid] == nil else { return }
        try db.cachedStatement(sql: SearchIndex.forget(where: "r.rowNumber = ?")).execute(arguments: [rowid])
        pending[rowid] = false
    }

    func addedAttachment(receiptID: ReceiptID, blob: BlobID) {
        counts.attachments += 1
        attached[blob, default: 0] += 1
    }

    /// The triggers of `tables`, dropped until `restore`: their names and text, in creation order
    /// (SQLite fires a table's triggers in the reverse of it; recreated in the same order).
    static func suspendTriggers(_ db: Database) throws -> [String] {
        let rows = try Row.fetchAll(db, sql: """
            SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name IN (\(tables.map { "'\($0)'" }.joined(separator: ", ")))
            ORDER BY rowid
            """)
        for row in rows {
            try db.execute(sql: "DROP TRIGGER \(try Self.quoted(row[0]))")
        }
        return rows.map { $0[1] }
    }

    static func restore(_ triggers: [String], _ db: Database) throws {
        for sql in triggers { try db.execute(sql: sql) }
    }

    private static func quoted(_ name: String) throws -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// Applies what the transaction did to the kept counts and the search index (the triggers'
    /// work, set-wise), before the triggers come back.
    func settle(_ db: Database) throws {
        var referenced = 0
        var textAdded: [[String]: Int] = [:]
        let anyText = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM blobText)") ?? false
        for (blob, added) in attached {
            // Named by an attachment for the first time: a blob row this transaction inserted, or one
            // whose attachments are all this transaction's (an unreferenced blob imported again).
            if !newBlobs.contains(blob) {
                let total = try Int.fetchOne(db.cachedStatement(sql: "SELECT count(*) FROM attachments WHERE sha256 = ?"),
                                             arguments: [blob]) ?? 0
                guard total == added else { continue }
            }
            referenced += 1
            if anyText, let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT extractor, state FROM blobText WHERE sha256 = ?"),
                                                   arguments: [blob]) {
                textAdded[[row[0], row[1]], default: 0] += 1
            }
        }
        let c = counts
        try db.execute(sql: """
            UPDATE keptCounts SET receipts = receipts + ?, attachments = attachments + ?, blobs = blobs + ?,
                externalBlobs = externalBlobs + ?, inlineBlobs = inlineBlobs + ?, logicalBytes = logicalBytes + ?,
                storedBytes = storedBytes + ?, referencedBlobs = referencedBlobs + ?
            WHERE one = 1
            """, arguments: [c.receipts, c.attachments, c.blobs, c.externalBlobs, c.inlineBlobs, c.logicalBytes,
                             c.storedBytes, referenced])
        for (key, delta) in textAdded {
            try db.execute(sql: """
                INSERT INTO keptTextCounts(extractor, state, blobs) VALUES (?, ?, ?)
                    ON CONFLICT(extractor, state) DO UPDATE SET blobs = blobs + excluded.blobs
                """, arguments: [key[0], key[1], delta])
        }
        // The new receipts at once when they fill their range (nothing else in it: a ledgered transaction
        // deletes nothing); the others one by one.
        if let range = fresh, range.last - range.first + 1 == Int64(range.count) {
            try db.execute(sql: SearchIndex.index(where: "r.rowNumber BETWEEN ? AND ?"), arguments: [range.first, range.last])
            pending = pending.filter { !$0.value }
        }
        // Prepared once per settle, not once per receipt: a span notes ~16,000.
        let note = try db.cachedStatement(sql: "INSERT INTO searchPending(receipt) VALUES (?)")
        for rowid in pending.keys.sorted() {
            try note.execute(arguments: [rowid])
        }
        if !pending.isEmpty { try db.execute(sql: SearchIndex.flushPending) }
    }
}

extension CatalogWriter {
    /// Throws unless this transaction keeps the row triggers: `verb` deletes or replaces rows, which
    /// a `Ledger` does not account for.
    func requireTriggers(_ verb: String) throws {
        if ledger != nil {
            throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "\(verb) cannot run in a ledgered transaction")
        }
    }
}
