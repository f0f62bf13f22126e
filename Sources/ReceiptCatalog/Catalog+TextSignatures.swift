import BlobStore
import Foundation
import GRDB

/// What finds a receipt entered twice (`receipt dups`): a small signature of each receipt's text,
/// indexed by its bands so alike texts are found by an index instead of by reading every text, and the
/// pairs a person said are two receipts.
extension Catalog {
    /// The signature tables of `v10-text-signatures` as that migration made them: 64-bit band keys in
    /// a table of their own (v15 converts the signatures and drops the band table: `SignatureHalves`).
    static let wholeSignaturesSQL = """
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
        """

    static let keptApartSQL = """
        CREATE TABLE keptApart (
            receiptRowA INTEGER NOT NULL REFERENCES receipts(rowNumber) ON DELETE CASCADE,
            receiptRowB INTEGER NOT NULL REFERENCES receipts(rowNumber) ON DELETE CASCADE,
            PRIMARY KEY (receiptRowA, receiptRowB),
            CHECK (receiptRowA < receiptRowB)
        ) WITHOUT ROWID;
        CREATE INDEX keptApart_by_b ON keptApart(receiptRowB);
        """

    /// A signature's first 128 bytes are 32 bands of two 16-bit minima: two texts that share one whole
    /// band are compared. Texts alike at 0.3 meet in a band 95 % of the time (1 - (1 - 0.3^2)^32), at
    /// 0.4 99.6 %. A band's key is its 4 bytes as stored, indexed by an index on that slice of the
    /// signature (`textSignatures_band0` …): a receipt's bands are written and deleted with its
    /// signature row, by the indexes' own seeks. Two unrelated texts share a band by accident with
    /// probability 32 × 2^-32: about 3,700 pairs at a million receipts, each dropped by one comparison
    /// of their signatures.
    public static let signatureBands = 32

    /// Band `band`'s key in `column`: the same expression in the indexes and in every query, so the
    /// query uses the index.
    static func bandKey(_ band: Int, of column: String = "minhash") -> String {
        "substr(\(column), \(band * 4 + 1), 4)"
    }

    /// The band indexes and, for a person reading the catalog, the view of every band key.
    static let signatureBandsSQL = (0..<signatureBands).map { band in
        "CREATE INDEX textSignatures_band\(band) ON textSignatures(\(bandKey(band)));"
    }.joined(separator: "\n") + "\nCREATE VIEW textBands(band, bandKey, receiptRow) AS " + (0..<signatureBands).map { band in
        "SELECT \(band), \(bandKey(band)), receiptRow FROM textSignatures WHERE length(minhash) > 0"
    }.joined(separator: " UNION ALL ") + ";"

    /// Receipts of the current extractor's text that have no signature yet (row order, after `after`).
    public static func unsignedRows(_ db: Database, extractor: String, after: Int64, limit: Int) throws -> [Int64] {
        try Int64.fetchAll(db, sql: """
            SELECT DISTINCT a.receiptRow FROM attachments a
            JOIN blobText t ON t.sha256 = a.sha256 AND t.extractor = ? AND t.state = 'text'
            WHERE a.receiptRow > ? AND NOT EXISTS (SELECT 1 FROM textSignatures s WHERE s.receiptRow = a.receiptRow AND s.extractor = ?)
            ORDER BY a.receiptRow LIMIT ?
            """, arguments: [extractor, after, extractor, limit])
    }

    /// Receipts of one zone that share a band key and whose dates and totals do not differ, one group at
    /// a time: only they can be alike (`Vault.sameText`). A key's receipts that all have a date and a
    /// total come split by (date, total), so one merchant's templated receipts of other days never
    /// form a group; a key with a receipt lacking either comes whole (such a receipt may pair with any).
    public static func forEachSharedBand(_ db: Database, zone: String?, _ body: ([Int64]) throws -> Void) throws {
        for band in 0..<signatureBands {
            let cursor = try Row.fetchCursor(db, sql: sharedBandSQL(band), arguments: [zone])
            while let row = try cursor.next() { try body(rowList(row[0])) }
        }
    }

    /// A band's keys held more than once, read off its index in key order, then their receipts by
    /// zone (?1, or all when NULL) and, where every one of a key's receipts has both, by date and total
    /// (ASCII digits, by their CHECKs and `ReceiptFields`: equal in SQL as in Swift).
    static func sharedBandSQL(_ band: Int) -> String {
        """
        SELECT group_concat(receiptRow) FROM (
            SELECT shared.bandKey, r.zone, s.receiptRow, r.date, r.total,
                max(r.date IS NULL OR r.total IS NULL) OVER (PARTITION BY shared.bandKey, r.zone) AS open
            FROM (
                SELECT \(bandKey(band)) AS bandKey FROM textSignatures GROUP BY 1 HAVING count(*) > 1 AND length(bandKey) = 4
            ) shared
            JOIN textSignatures s ON \(bandKey(band, of: "s.minhash")) = shared.bandKey
            JOIN receipts r ON r.rowNumber = s.receiptRow
            WHERE ?1 IS NULL OR r.zone = ?1
        )
        GROUP BY bandKey, zone, CASE WHEN open THEN NULL ELSE date END, CASE WHEN open THEN NULL ELSE total END
        HAVING count(*) > 1
        """
    }

    /// The receipts of the same zone that share a band key with this one and whose dates and totals do
    /// not differ from its own (a missing one differs from none). A dated receipt's are looked up by
    /// its day (and among the undated), not by its bands: one shop's templated receipts of every other
    /// day share its bands by the hundred.
    public static func bandNeighbours(_ db: Database, row: Int64) throws -> [Int64] {
        let dated = try Bool.fetchOne(db, sql: "SELECT date IS NOT NULL FROM receipts WHERE rowNumber = ?", arguments: [row]) ?? false
        return try Int64.fetchAll(db, sql: dated ? sameDayNeighboursSQL : bandNeighboursSQL, arguments: [row])
    }

    /// Receipt ?1's neighbours: each of its band keys looked up in its band's index.
    static let bandNeighboursSQL = """
        SELECT n.receiptRow FROM (\((0..<signatureBands).map { band in """
            SELECT o.receiptRow FROM textSignatures m JOIN textSignatures o ON \(bandKey(band, of: "o.minhash")) = \(bandKey(band, of: "m.minhash"))
            WHERE m.receiptRow = ?1 AND length(m.minhash) > 0 AND o.receiptRow != ?1
            """ }.joined(separator: " UNION "))) n
        JOIN receipts q ON q.rowNumber = n.receiptRow JOIN receipts r ON r.rowNumber = ?1 AND r.zone = q.zone
        WHERE (q.date IS NULL OR r.date IS NULL OR q.date = r.date) AND (q.total IS NULL OR r.total IS NULL OR q.total = r.total)
        """

    /// Dated receipt ?1's neighbours: the receipts of its zone on its day or on none (by
    /// `receipts_by_zone_date`) whose totals do not differ and that share one of its band keys.
    static let sameDayNeighboursSQL = ["q.date = r.date", "q.date IS NULL"].map { day in """
        SELECT q.rowNumber FROM receipts r JOIN textSignatures m ON m.receiptRow = r.rowNumber
        JOIN receipts q ON q.zone = r.zone AND \(day) JOIN textSignatures o ON o.receiptRow = q.rowNumber
        WHERE r.rowNumber = ?1 AND length(m.minhash) > 0 AND q.rowNumber != ?1
            AND (q.total IS NULL OR r.total IS NULL OR q.total = r.total)
            AND (\((0..<signatureBands).map { "\(bandKey($0, of: "o.minhash")) = \(bandKey($0, of: "m.minhash"))" }.joined(separator: " OR ")))
        """ }.joined(separator: " UNION ")

    /// What tells receipts apart, by row: date, total and text signature (nil when not signed yet).
    public static func signedFields(_ db: Database, rows: [Int64]) throws -> [Int64: SignedFields] {
        var out: [Int64: SignedFields] = [:]
        try forEachRow(db, in: rows, sql: { """
            SELECT r.rowNumber, r.date, r.total, s.minhash FROM receipts r LEFT JOIN textSignatures s ON s.receiptRow = r.rowNumber
            WHERE r.rowNumber IN (\($0))
            """ }) { row in
            let signature: Data? = row[3]
            out[row[0]] = SignedFields(date: row[1], total: row[2], signature: signature.map { [UInt8]($0) })
        }
        return out
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

    /// Receipt ids by row number (`dups` asks for every grouped receipt of the vault: asked in one
    /// statement they held a row object each, 52 MB at a million, and could pass SQLite's limit).
    public static func receiptIDs(_ db: Database, rows: [Int64]) throws -> [Int64: ReceiptID] {
        var out: [Int64: ReceiptID] = [:]
        out.reserveCapacity(rows.count)
        try forEachRow(db, in: rows, sql: { "SELECT rowNumber, id FROM receipts WHERE rowNumber IN (\($0))" }) {
            out[try $0.decode(atIndex: 0)] = try $0.decode(atIndex: 1)
        }
        return out
    }

    /// Those of `ids` created at or after `since`.
    public static func receipts(_ db: Database, among ids: [ReceiptID], createdSince since: Millis) throws -> Set<ReceiptID> {
        var out = Set<ReceiptID>()
        try forEachRow(db, in: ids, leading: [since], sql: { "SELECT id FROM receipts WHERE createdAt >= ? AND id IN (\($0))" }) {
            out.insert(try $0.decode(atIndex: 0))
        }
        return out
    }

    private static func rowList(_ text: String) -> [Int64] { text.split(separator: ",").compactMap { Int64($0) } }
}

/// A receipt's date, total and text signature: what `dups` compares.
public struct SignedFields: Sendable {
    public var date: String?
    public var total: String?
    public var signature: [UInt8]?
}

extension CatalogWriter {
    /// Stores a receipt's text signature (its band keys with it, by the band indexes), replacing an older one.
    /// One prepared statement for every receipt `index` signs: it writes 32 indexes, so preparing it
    /// again for each receipt cost more than running it.
    public func setTextSignature(row: Int64, extractor: String, minhash: [UInt8]) throws {
        try db.cachedStatement(sql: """
            INSERT INTO textSignatures(receiptRow, extractor, minhash) VALUES (?, ?, ?)
            ON CONFLICT(receiptRow) DO UPDATE SET extractor = excluded.extractor, minhash = excluded.minhash
            """).execute(arguments: [row, extractor, Data(minhash)])
    }

    /// Records that a person keeps these two receipts as two.
    public func keepApart(_ a: Int64, _ b: Int64) throws {
        try db.execute(sql: "INSERT OR IGNORE INTO keptApart(receiptRowA, receiptRowB) VALUES (?, ?)", arguments: [min(a, b), max(a, b)])
    }
}
