import BlobStore
import Foundation
import GRDB
import ReceiptWire

/// What the vault read of one field from a receipt's text and has not had confirmed by a person: a
/// value it filled in (`filled`), or one it only offers (a suggestion).
public struct FieldReading: Codable, Sendable, Equatable {
    public var value: String
    public var confidence: Double
    /// The line of the text it came from.
    public var line: String
    public var filled: Bool

    public init(value: String, confidence: Double, line: String, filled: Bool) {
        self.value = value
        self.confidence = confidence
        self.line = line
        self.filled = filled
    }
}

/// The readings of one receipt, by field name (`merchant`, `date`, `total`, `currency`). A field leaves
/// it when a person confirms or sets it; the row goes when none is left to review.
public struct ReceiptReading: Sendable, Equatable {
    public var extractor: String
    public var fields: [String: FieldReading]

    public init(extractor: String, fields: [String: FieldReading]) {
        self.extractor = extractor
        self.fields = fields
    }

    public var filled: [String] { fields.filter(\.value.filled).keys.sorted() }
    public var suggestions: [String: FieldReading] { fields.filter { !$0.value.filled } }

    /// What is still the reading's of `receipt` as it is now: a filled field whose value no one
    /// changed since, a suggestion for a field still blank (a person's edit synced in, a manifest,
    /// may have set them since).
    public func pending(in receipt: Receipt) -> ReceiptReading {
        ReceiptReading(extractor: extractor, fields: fields.filter { name, field in
            let current = receipt.value(ofRead: name)
            return field.filled ? current == field.value : current == nil
        })
    }
}

extension Receipt: ReadableFields {}

/// Readings of receipts' texts, the merchant names a household gave a header line, and the day order
/// a merchant prints (`v9-readings`).
extension Catalog {
    static let readingsSQL = """
        CREATE TABLE receiptReadings (
            receiptRow INTEGER PRIMARY KEY REFERENCES receipts(rowNumber) ON DELETE CASCADE,
            extractor TEXT NOT NULL,
            fields TEXT NOT NULL CHECK (json_valid(fields))
        );
        CREATE TABLE merchantAliases (
            headerKey TEXT PRIMARY KEY NOT NULL CHECK (length(headerKey) > 0),
            merchant TEXT NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE merchantDateOrders (
            merchantKey TEXT PRIMARY KEY NOT NULL,
            dayOrder TEXT NOT NULL CHECK (dayOrder IN ('dayFirst', 'monthFirst'))
        ) WITHOUT ROWID;
        """

    /// The readings of these receipt rows (those that have one).
    public static func readings(_ db: Database, ofRows rows: [Int64]) throws -> [Int64: ReceiptReading] {
        guard !rows.isEmpty else { return [:] }
        var out: [Int64: ReceiptReading] = [:]
        let cursor = try Row.fetchCursor(db.cachedStatement(sql: """
            SELECT receiptRow, extractor, fields FROM receiptReadings WHERE receiptRow IN (\(placeholders(rows.count)))
            """), arguments: StatementArguments(rows))
        while let row = try cursor.next() {
            out[row[0]] = try reading(extractor: row[1], json: row[2])
        }
        return out
    }

    static func reading(extractor: String, json: String) throws -> ReceiptReading {
        ReceiptReading(extractor: extractor, fields: try JSONDecoder().decode([String: FieldReading].self, from: Data(json.utf8)))
    }

    /// The reading of the receipt `id`, if it has one.
    public static func reading(_ db: Database, receiptID id: ReceiptID) throws -> ReceiptReading? {
        try Row.fetchOne(db.cachedStatement(sql: """
            SELECT rr.extractor, rr.fields FROM receiptReadings rr JOIN receipts r ON r.rowNumber = rr.receiptRow WHERE r.id = ?
            """), arguments: [id]).map { try reading(extractor: $0[0], json: $0[1]) }
    }

    /// The row numbers of receipts with a reading left to review, in row order after `after`.
    public static func rowsToReview(_ db: Database, after: Int64, limit: Int) throws -> [Int64] {
        try Int64.fetchAll(db, sql: "SELECT receiptRow FROM receiptReadings WHERE receiptRow > ? ORDER BY receiptRow LIMIT ?",
                           arguments: [after, limit])
    }

    /// Receipts (row number, id) one of whose files is one of `blobs`.
    public static func receiptRows(_ db: Database, withBlobs blobs: [BlobID]) throws -> [(row: Int64, id: ReceiptID)] {
        var out: [Int64: ReceiptID] = [:]
        try forEachRow(db, in: blobs, sql: { "SELECT DISTINCT a.receiptRow, a.receiptID FROM attachments a WHERE a.sha256 IN (\($0))" }) {
            out[try $0.decode(atIndex: 0)] = try $0.decode(atIndex: 1)
        }
        return out.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// The extracted texts of a receipt's files for `extractor`, in the files' order, with their names.
    public static func texts(_ db: Database, ofRow row: Int64, extractor: String) throws -> [(filename: String, text: String)] {
        try Row.fetchAll(db, sql: """
            SELECT a.filename, t.text FROM attachments a JOIN \(TextOnce.view) t ON t.sha256 = a.sha256 AND t.extractor = ? AND t.state = 'text'
            WHERE a.receiptRow = ? ORDER BY a.position
            """, arguments: [extractor, row]).map { ($0[0], $0[1]) }
    }

    /// The receipts of these row numbers, in row order.
    public static func receipts(_ db: Database, ofRows rows: [Int64]) throws -> [Receipt] {
        guard !rows.isEmpty else { return [] }
        return try Receipt.fetchAll(db, sql: """
            SELECT \(Receipt.selection) FROM receipts r WHERE r.rowNumber IN (\(placeholders(rows.count))) ORDER BY r.rowNumber
            """, arguments: StatementArguments(rows))
    }

    /// The row number of a receipt.
    public static func receiptRow(_ db: Database, id: ReceiptID) throws -> Int64? {
        try Int64.fetchOne(db, sql: "SELECT rowNumber FROM receipts WHERE id = ?", arguments: [id])
    }

    public static func merchantAliases(_ db: Database) throws -> [String: String] {
        var out: [String: String] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT headerKey, merchant FROM merchantAliases") { out[row[0]] = row[1] }
        return out
    }

    /// The day order remembered for a merchant (keyed as `aliasKey` keys names), if a person confirmed one.
    public static func dateOrder(_ db: Database, merchantKey: String) throws -> String? {
        try String.fetchOne(db, sql: "SELECT dayOrder FROM merchantDateOrders WHERE merchantKey = ?", arguments: [merchantKey])
    }
}

extension CatalogWriter {
    /// Stores a receipt's reading, or removes it when no field is left in it. A reading travels with
    /// its receipt (docs/PROTOCOL.md, revision 6), so a change of it queues the receipt's outbox entry.
    public func setReading(_ reading: ReceiptReading, row: Int64) throws {
        guard try writeReading(reading, row: row),
              let receipt = try Row.fetchOne(db, sql: "SELECT id, zone FROM receipts WHERE rowNumber = ?", arguments: [row]) else { return }
        try recordChange(try receipt.decode(atIndex: 0), zone: try receipt.decode(atIndex: 1), .upsert)
    }

    /// The reading of a receipt pulled from the server (which has it: no outbox entry).
    public func savePulledReading(_ reading: ReceiptReading, receiptID id: ReceiptID) throws {
        guard let row = try Catalog.receiptRow(db, id: id) else { return }
        _ = try writeReading(reading, row: row)
    }

    /// Writes the reading; false when it was already so.
    private func writeReading(_ reading: ReceiptReading, row: Int64) throws -> Bool {
        let stored = try String.fetchOne(db, sql: "SELECT fields FROM receiptReadings WHERE receiptRow = ?", arguments: [row])
        guard !reading.fields.isEmpty else {
            try db.execute(sql: "DELETE FROM receiptReadings WHERE receiptRow = ?", arguments: [row])
            return stored != nil
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = String(decoding: try encoder.encode(reading.fields), as: UTF8.self)
        guard json != stored else { return false }
        try db.execute(sql: "INSERT OR REPLACE INTO receiptReadings(receiptRow, extractor, fields) VALUES (?, ?, ?)",
                       arguments: [row, reading.extractor, json])
        return true
    }

    public func setMerchantAlias(headerKey: String, merchant: String) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO merchantAliases(headerKey, merchant) VALUES (?, ?)", arguments: [headerKey, merchant])
    }

    public func setDateOrder(merchantKey: String, order: String) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO merchantDateOrders(merchantKey, dayOrder) VALUES (?, ?)",
                       arguments: [merchantKey, order])
    }
}
