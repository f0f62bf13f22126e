import BlobStore
import Foundation
import GRDB

/// What finds a receipt entered twice (`receipt dups`, `v10-text-signatures`): a small signature of
/// each receipt's text with its band keys, so alike texts are found by an index instead of by reading
/// every text, and the pairs a person said are two receipts.
extension Catalog {
    static let textSignaturesSQL = """
        CREATE TABLE textSignatures (
            receiptRow INTEGER PRIMARY KEY REFERENCES receipts(rowNumber) ON DELETE CASCADE,
            extractor TEXT NOT NULL,
            minhash BLOB NOT NULL
        );
        CREATE TABLE textBands (
            bandKey INTEGER NOT NULL,
            receiptRow INTEGER NOT NULL REFERENCES textSignatures(receiptRow) ON DELETE CASCADE,
            PRIMARY KEY (bandKey, receiptRow)
        ) WITHOUT ROWID;
        CREATE INDEX textBands_by_row ON textBands(receiptRow);
        CREATE TABLE keptApart (
            receiptRowA INTEGER NOT NULL REFERENCES receipts(rowNumber) ON DELETE CASCADE,
            receiptRowB INTEGER NOT NULL REFERENCES receipts(rowNumber) ON DELETE CASCADE,
            PRIMARY KEY (receiptRowA, receiptRowB),
            CHECK (receiptRowA < receiptRowB)
        ) WITHOUT ROWID;
        CREATE INDEX keptApart_by_b ON keptApart(receiptRowB);
        """

    /// The stored signature of a receipt's text, if any.
    public static func textSignature(_ db: Database, row: Int64) throws -> [UInt8]? {
        try Data.fetchOne(db, sql: "SELECT minhash FROM textSignatures WHERE receiptRow = ?", arguments: [row]).map { [UInt8]($0) }
    }

    /// Receipts of the current extractor's text that have no signature yet (row order, after `after`).
    public static func unsignedRows(_ db: Database, extractor: String, after: Int64, limit: Int) throws -> [Int64] {
        try Int64.fetchAll(db, sql: """
            SELECT DISTINCT a.receiptRow FROM attachments a
            JOIN blobText t ON t.sha256 = a.sha256 AND t.extractor = ? AND t.state = 'text'
            WHERE a.receiptRow > ? AND NOT EXISTS (SELECT 1 FROM textSignatures s WHERE s.receiptRow = a.receiptRow AND s.extractor = ?)
            ORDER BY a.receiptRow LIMIT ?
            """, arguments: [extractor, after, extractor, limit])
    }

    /// Each band key shared by receipts of one zone, with those receipts' rows, one key at a time.
    public static func forEachSharedBand(_ db: Database, zone: String?, _ body: ([Int64]) throws -> Void) throws {
        let cursor = try Row.fetchCursor(db, sql: """
            SELECT group_concat(b.receiptRow) FROM textBands b JOIN receipts r ON r.rowNumber = b.receiptRow
            WHERE ?1 IS NULL OR r.zone = ?1
            GROUP BY b.bandKey, r.zone HAVING count(*) > 1
            """, arguments: [zone])
        while let row = try cursor.next() { try body(rowList(row[0])) }
    }

    /// The receipts of the same zone that share a band key with this one.
    public static func bandNeighbours(_ db: Database, row: Int64) throws -> [Int64] {
        try Int64.fetchAll(db, sql: """
            SELECT DISTINCT o.receiptRow FROM textBands m JOIN textBands o ON o.bandKey = m.bandKey AND o.receiptRow != m.receiptRow
            JOIN receipts r ON r.rowNumber = m.receiptRow JOIN receipts q ON q.rowNumber = o.receiptRow AND q.zone = r.zone
            WHERE m.receiptRow = ?
            """, arguments: [row])
    }

    /// Groups of receipts of one zone with the same merchant (any case), date and total, one at a time.
    public static func forEachSameFields(_ db: Database, zone: String?, _ body: ([Int64]) throws -> Void) throws {
        let cursor = try Row.fetchCursor(db, sql: """
            SELECT group_concat(rowNumber) FROM receipts
            WHERE merchant IS NOT NULL AND date IS NOT NULL AND total IS NOT NULL AND (?1 IS NULL OR zone = ?1)
            GROUP BY zone, lower(trim(merchant)), date, total HAVING count(*) > 1
            """, arguments: [zone])
        while let row = try cursor.next() { try body(rowList(row[0])) }
    }

    /// The other receipts of its zone with this receipt's merchant, date and total.
    public static func sameFields(_ db: Database, row: Int64) throws -> [Int64] {
        try Int64.fetchAll(db, sql: """
            SELECT o.rowNumber FROM receipts m JOIN receipts o ON o.total = m.total AND o.date = m.date AND o.zone = m.zone
                AND lower(trim(o.merchant)) = lower(trim(m.merchant)) AND o.rowNumber != m.rowNumber
            WHERE m.rowNumber = ?
            """, arguments: [row])
    }

    /// Whether a person said these two receipts are two.
    public static func keptApart(_ db: Database, _ a: Int64, _ b: Int64) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT 1 FROM keptApart WHERE receiptRowA = ? AND receiptRowB = ?",
                          arguments: [min(a, b), max(a, b)]) ?? false
    }

    /// Receipt ids by row number.
    public static func receiptIDs(_ db: Database, rows: [Int64]) throws -> [Int64: ReceiptID] {
        guard !rows.isEmpty else { return [:] }
        var out: [Int64: ReceiptID] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT rowNumber, id FROM receipts WHERE rowNumber IN (\(placeholders(rows.count)))",
                                    arguments: StatementArguments(rows)) {
            out[try row.decode(atIndex: 0)] = try row.decode(atIndex: 1)
        }
        return out
    }

    private static func rowList(_ text: String) -> [Int64] { text.split(separator: ",").compactMap { Int64($0) } }
}

extension CatalogWriter {
    /// Stores a receipt's text signature and its band keys, replacing an older one.
    public func setTextSignature(row: Int64, extractor: String, minhash: [UInt8], bandKeys: [Int64]) throws {
        try db.execute(sql: "DELETE FROM textBands WHERE receiptRow = ?", arguments: [row])
        try db.execute(sql: "DELETE FROM textSignatures WHERE receiptRow = ?", arguments: [row])
        try db.execute(sql: "INSERT INTO textSignatures(receiptRow, extractor, minhash) VALUES (?, ?, ?)",
                       arguments: [row, extractor, Data(minhash)])
        let insert = try db.cachedStatement(sql: "INSERT OR IGNORE INTO textBands(bandKey, receiptRow) VALUES (?, ?)")
        for key in bandKeys { try insert.execute(arguments: [key, row]) }
    }

    /// Records that a person keeps these two receipts as two.
    public func keepApart(_ a: Int64, _ b: Int64) throws {
        try db.execute(sql: "INSERT OR IGNORE INTO keptApart(receiptRowA, receiptRowB) VALUES (?, ?)", arguments: [min(a, b), max(a, b)])
    }
}
