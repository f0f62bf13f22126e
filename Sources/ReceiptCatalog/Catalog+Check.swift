import BlobStore
import Foundation
import GRDB

/// A blob row as fsck compares it with its file.
public struct CheckedBlobRow: Sendable {
    public let id: BlobID
    public let size: Int64
    public let storedSize: Int64
    public let encoding: BlobEncoding
    public let inline: Bool
}

/// What fsck's checker reads of the catalog, in one snapshot (docs/DESIGN.md, "fsck"). Nothing is
/// held per row of the vault but the file-backed blobs: inline blobs are checked in a pass of their
/// own (`forEachInlineBlob`), a blob's receipts are asked only for a blob with a problem
/// (`receipts(of:)`), and each file is looked up as it is listed (a dictionary of every attachment
/// and a set of every address took ~200 MB at a million receipts).
public struct CatalogCheckSnapshot: Sendable {
    /// Blobs kept in files.
    public var rows: [CheckedBlobRow] = []
    /// Blobs kept in the catalog, and their recorded sizes' sum (counted in the same pass as the rows).
    public var inlineBlobs = 0
    public var inlineBytes: Int64 = 0
    /// Files of the blob tree no row records.
    public var unrecorded: [BlobFile] = []
    /// Blob rows whose address or encoding is not valid, as stored.
    public var badRows: [(sha256: DatabaseValue, encoding: String)] = []
    /// Receipt rows whose id is no receipt id (a UUID), as stored: row number → id.
    public var malformedReceiptIDs: [(row: Int64, id: String)] = []
    /// Attachments whose blob row is absent: address → receipts.
    public var dangling: [String: [String]] = [:]
    /// Failing foreign keys, but attachment → blob (those are the `dangling` ones).
    public var foreignKeys: [(table: String, rowid: Int64?, parent: String)] = []
    /// Zones receipts name that the catalog lacks; receipts attachments name that it lacks.
    public var missingZones: [String] = []
    public var missingReceipts: [String] = []
}

/// fsck's verbs: reads for the checker (which changes nothing), and the few row writes of its repair
/// that are not a blob entering (those go through the vault's ingest path).
extension Catalog {
    /// SQLite's `integrity_check`, without its "ok". `quick`: its `quick_check`, which skips matching
    /// every index to its table (the part whose cost grows faster than the catalog: most of the 10 s
    /// of a 100,000-receipt `fsck --quick`), table by table for every table but the derived ones.
    ///
    /// Why not them: the extracted text and the search index are rebuilt from the rest (`receipt index
    /// --rebuild`, `fsck --repair`) and hold nothing a user gave, but they are most of a catalog with
    /// text (a million small receipts: 6.9 of 10.1 GB, the receipts' text three times over), and
    /// reading them made `--quick` 21 s there instead of 5. The full check reads every page, and checks
    /// what only a whole-file check can (no page used twice, none lost).
    public func sqliteDamage(quick: Bool = false) throws -> [String] {
        try read { db in
            guard quick else { return try String.fetchAll(db, sql: "PRAGMA integrity_check").filter { $0 != "ok" } }
            let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'")
                .filter { !Self.derivedTables($0) }
            var damage: [String] = []
            for table in ["sqlite_master"] + tables {
                damage += try String.fetchAll(db, sql: "PRAGMA quick_check(\(table.quotedDatabaseIdentifier))").filter { $0 != "ok" }
            }
            return damage
        }
    }

    /// The tables whose rows are made from the others': the extracted text, the search index's own, and
    /// the texts' re-scan signatures with their 32 band indexes (733 MB of a million-receipt catalog;
    /// `index --rebuild` signs every text again; --quick still reads their rows for their foreign key,
    /// `FsckTests.testASignatureWithoutItsReceiptIsFoundQuickOrNot`, but not their indexes' pages).
    static func derivedTables(_ name: String) -> Bool {
        name == "blobText" || name == "textSignatures" || name.hasPrefix(SearchIndex.table + "_")
    }

    /// The snapshot, `files` (listed before it was taken) sorted into recorded and not.
    public func checkSnapshot(files: [BlobFile]) throws -> CatalogCheckSnapshot {
        try read { db in
            var s = CatalogCheckSnapshot()
            let rows = try Row.fetchCursor(db, sql: "SELECT sha256, size, storedSize, encoding, inline IS NOT NULL FROM blobs")
            while let row = try rows.next() {
                let encodingText: String = row[3]
                guard let id = row.blobID(0), let encoding = BlobEncoding(rawValue: encodingText) else {
                    s.badRows.append((row[0], encodingText))
                    continue
                }
                let inline: Bool = row[4]
                if inline {
                    s.inlineBlobs += 1
                    s.inlineBytes += row[1] as Int64
                } else {
                    s.rows.append(CheckedBlobRow(id: id, size: row[1], storedSize: row[2], encoding: encoding, inline: false))
                }
            }
            s.malformedReceiptIDs = try Row.fetchAll(db, sql: """
                SELECT rowNumber, \(ReceiptID.shown("id")) FROM receipts WHERE typeof(id) != 'blob' OR length(id) != 16
                """).map { ($0[0], $0[1] ?? "") }
            let recorded = try db.makeStatement(sql: "SELECT 1 FROM blobs WHERE sha256 = ?")
            for file in files {
                guard let id = file.id, try Bool.fetchOne(recorded, arguments: [id]) == nil else { continue }
                s.unrecorded.append(file)
            }
            // The attachments whose blob row is absent are found in the blob index alone (both walked in
            // address order), and only those are read from the table for their receipt's id: asked in
            // one statement, SQLite read each attachment's table row as it walked the index, a random
            // page per attachment (21 of the 33 GB a million-receipt `fsck --quick` read, 6 of its 8 s).
            let dangling = try Row.fetchCursor(db, sql: """
                WITH d AS MATERIALIZED (
                    SELECT receiptRow, sha256 FROM attachments a WHERE NOT EXISTS (SELECT 1 FROM blobs b WHERE b.sha256 = a.sha256))
                SELECT d.sha256, \(ReceiptID.shown("a.receiptID")) FROM d JOIN attachments a USING (receiptRow, sha256)
                ORDER BY d.sha256, a.receiptID
                """)
            while let row = try dangling.next() { s.dangling[Self.shownAddress(row[0]), default: []].append(row[1]) }
            // SQLite's `foreign_key_check`, table by table, but for attachments, whose links are asked
            // in their own key order: attachment → blob is `dangling` above, attachment → receipt the
            // query below. The pragma looked each attachment's blob up at random: 3.9 s of a
            // million-receipt `fsck --quick`, against 0.4 s for the two queries.
            let links = try Row.fetchAll(db, sql: """
                SELECT DISTINCT m.name, f."table" FROM sqlite_master m, pragma_foreign_key_list(m.name) f
                WHERE m.type = 'table' ORDER BY 1, 2
                """).map { (child: $0[0] as String, parent: $0[1] as String) }
            let attachmentsAsked = links.filter { $0.child == "attachments" }.allSatisfy { ["blobs", "receipts"].contains($0.parent) }
            for table in Set(links.map(\.child)).sorted() where !(table == "attachments" && attachmentsAsked) {
                let quoted = "\"" + table.replacingOccurrences(of: "\"", with: "\"\"") + "\""
                for row in try Row.fetchAll(db, sql: "PRAGMA foreign_key_check(\(quoted))") {
                    let parent: String = row[2]
                    if table == "attachments" && parent == "blobs" { continue }
                    s.foreignKeys.append((table, row[1], parent))
                }
            }
            if attachmentsAsked {
                s.missingReceipts = try Self.attachmentsWithoutReceipt(db)
                s.foreignKeys += s.missingReceipts.map { _ in ("attachments", nil, "receipts") }
            }
            if !s.foreignKeys.isEmpty {
                s.missingZones = try String.fetchAll(db, sql: "SELECT DISTINCT zone FROM receipts WHERE zone NOT IN (SELECT name FROM zones)")
                if !attachmentsAsked { s.missingReceipts = try Self.attachmentsWithoutReceipt(db) }
            }
            return s
        }
    }

    /// A UUID's text, either case, as a GLOB pattern (one scan of the ids in SQL, no row read out).
    public static let uuidPattern = [8, 4, 4, 4, 12].map { String(repeating: "[0-9a-fA-F]", count: $0) }.joined(separator: "-")

    /// Receipts attachments name that the catalog lacks (in the attachments' key order).
    private static func attachmentsWithoutReceipt(_ db: Database) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT DISTINCT \(ReceiptID.shown("receiptID")) FROM attachments WHERE receiptRow NOT IN (SELECT rowNumber FROM receipts)")
    }

    /// The receipts that refer to a blob, in attachment order (asked only for a blob with a problem).
    public func receipts(of id: BlobID) -> [String] { receipts(ofDamagedAddress: id.databaseValue) }

    /// The receipts whose attachments hold `stored` as their blob's address, as stored: for a damaged
    /// blob row, whose address is no `BlobID` (`CatalogCheckSnapshot.badRows`).
    public func receipts(ofDamagedAddress stored: DatabaseValue) -> [String] {
        (try? read { db in
            try String.fetchAll(db.cachedStatement(sql: "SELECT \(ReceiptID.shown("receiptID")) FROM attachments WHERE sha256 = ? ORDER BY position, receiptID"),
                                arguments: [stored])
        }) ?? []
    }

    /// An address as stored, for a person: its hex digits (those of whatever bytes a damaged row
    /// holds), or the text of a row that holds text.
    public static func shownAddress(_ stored: DatabaseValue) -> String {
        switch stored.storage {
        case .blob(let bytes): bytes.withUnsafeBytes(BlobID.hexText)
        case .string(let text): text
        default: "\(stored)"
        }
    }

    /// Each inline blob's address, recorded size and bytes, one at a time (one read transaction). A
    /// row whose address is not one is left out: `checkSnapshot` reports it (`badRows`).
    public func forEachInlineBlob(_ body: (_ id: BlobID, _ size: Int64, _ bytes: [UInt8]) throws -> Void) throws {
        try read { db in
            let rows = try Row.fetchCursor(db, sql: "SELECT sha256, size, inline FROM blobs WHERE inline IS NOT NULL")
            while let row = try rows.next() {
                guard let id = row.blobID(0) else { continue }
                try body(id, row[1], (row[2] as Data?).map { [UInt8]($0) } ?? [])
            }
        }
    }

    /// Those of `ids` that have no blob row (now).
    public func unrecorded(_ ids: [BlobID]) throws -> Set<BlobID> {
        try read { db in
            var out = Set<BlobID>()
            for id in ids where try !BlobRecord.exists(db, key: id) { out.insert(id) }
            return out
        }
    }
}

extension CatalogWriter {
    /// Creates the zone unless the catalog has it.
    public func ensureZone(_ name: String) throws {
        try Zone(name: name, createdAt: now).insert(db, onConflict: .ignore)
    }

    /// A receipt that carries only a note (one fsck recovered), unless present, with its outbox entry.
    /// `row`: the row number its attachments name, for a receipt whose row was lost (`receiptRow(ofLost:)`);
    /// nil for a new receipt.
    public func insertRecoveredReceipt(id: ReceiptID, zone: String, note: String, row: Int64? = nil) throws {
        try requireTriggers("insertRecoveredReceipt")
        try db.execute(sql: """
            INSERT OR IGNORE INTO receipts(rowNumber, id, zone, note, createdAt, modifiedAt) VALUES (?, ?, ?, ?, ?, ?)
            """, arguments: [row, id, zone, note, now, now])
        // Nothing inserted (the id or the row is taken): no change to send.
        if db.changesCount > 0 { try recordChange(id, zone: zone, .upsert) }
    }

    /// The row number the attachments of a receipt whose row is gone name. A scan of the attachments
    /// (the id they keep is not indexed): once per lost receipt, in a repair.
    public func receiptRow(ofLost id: ReceiptID) throws -> Int64? {
        try Int64.fetchOne(db, sql: """
            SELECT receiptRow FROM attachments WHERE receiptID = ? AND receiptRow NOT IN (SELECT rowNumber FROM receipts) LIMIT 1
            """, arguments: [id])
    }
}
