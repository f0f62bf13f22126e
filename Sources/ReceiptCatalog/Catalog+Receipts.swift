import Foundation
import BlobStore
import GRDB

/// The `receipts` table. A local change of a receipt writes its outbox entry in the same
/// transaction (`recordChange`, I6); rows a sync applies from the server write none.
extension Catalog {
    /// Prepared once per connection, as every per-row lookup of the catalog: preparing a statement runs
    /// GRDB's authorizer over each column it reads, which for a sync of thousands of receipts was a
    /// sixth of its time (docs/DESIGN.md, "Statements prepared once").
    public static func receipt(_ db: Database, _ id: ReceiptID) throws -> Receipt? {
        try Receipt.fetchOne(db.cachedStatement(sql: "SELECT \(Receipt.selection) FROM receipts r WHERE r.id = ?"), arguments: [id])
    }

    /// The zone of a receipt, through SQLite's C API (a large manifest asks once a row).
    public static func zone(_ db: Database, ofReceipt id: ReceiptID) throws -> String? {
        try RowStatements.text(db, "SELECT zone FROM receipts WHERE id = ?") { $0.receiptID(id) }
    }

    /// The receipts with these ids that exist, in no particular order.
    public static func receipts(_ db: Database, ids: [ReceiptID]) throws -> [Receipt] {
        // By id, not by primary key: the key is the row number (`ReceiptRows`).
        guard !ids.isEmpty else { return [] }
        return try Receipt.fetchAll(db, sql: "SELECT \(Receipt.selection) FROM receipts r WHERE r.id IN (\(placeholders(ids.count)))",
                                    arguments: StatementArguments(ids))
    }

    /// Calls `body` with each receipt of `scope`, oldest date first (undated last), then by id, one at
    /// a time (memory does not grow with the vault). Two passes that each follow an index's order
    /// (`receipts_by_date` or `receipts_by_zone_date`: dated, then undated) where one
    /// `ORDER BY date IS NULL, date, id` made SQLite sort every matching row before the first came out.
    public static func forEachReceipt(_ db: Database, in scope: ReceiptScope, _ body: (Receipt, _ rowNumber: Int64) throws -> Void) throws {
        let (filter, args) = scope.sql()
        let dated = try Row.fetchCursor(db, sql: """
            SELECT \(Receipt.selection), r.rowNumber FROM receipts r WHERE \(filter) AND r.date IS NOT NULL ORDER BY r.date, r.id
            """, arguments: args)
        let number = Receipt.columnNames.count
        while let row = try dated.next() { try body(Receipt(row: row), row.decode(atIndex: number)) }
        // A date filter excludes the undated.
        guard scope.from == nil && scope.to == nil else { return }
        let undated = try Row.fetchCursor(db, sql: """
            SELECT \(Receipt.selection), r.rowNumber FROM receipts r WHERE \(filter) AND r.date IS NULL ORDER BY r.id
            """, arguments: args)
        while let row = try undated.next() { try body(Receipt(row: row), row.decode(atIndex: number)) }
    }

    /// Up to two ids whose text starts with `prefix` (either case; a unique prefix names one receipt).
    /// Ids are stored as bytes: the prefix's digits are the range from them padded with `0` to them
    /// padded with `f` (so an odd number of digits is half a byte's range). A prefix no id's text
    /// could start with (a dash out of place, a character that is no digit) matches none.
    public static func receiptIDs(_ db: Database, prefixed prefix: String) throws -> [ReceiptID] {
        let shape = "00000000-0000-0000-0000-000000000000"
        guard prefix.count <= shape.count, zip(prefix, shape).allSatisfy({ given, expected in
            expected == "-" ? given == "-" : given.isASCII && given.isHexDigit
        }) else { return [] }
        let digits = prefix.filter { $0 != "-" }
        func bytes(padding pad: Character) -> Data {
            let hex = Array(digits + String(repeating: pad, count: 32 - digits.count))
            return Data(stride(from: 0, to: 32, by: 2).map { UInt8(String(hex[$0...$0 + 1]), radix: 16) ?? 0 })  // digits checked above
        }
        return try ReceiptID.fetchAll(db, sql: "SELECT id FROM receipts WHERE id BETWEEN ? AND ? LIMIT 2",
                                      arguments: [bytes(padding: "0"), bytes(padding: "f")])
    }

    /// Calls `body` with the group key, currency and total of each receipt of `scope`, one row at a
    /// time (memory grows with the caller's groups only).
    public static func forEachTotal(_ db: Database, by key: ReportKey, in scope: ReceiptScope,
                                    _ body: (_ key: String?, _ currency: String?, _ total: String?) throws -> Void) throws {
        let (filter, args) = scope.sql()
        let rows = try Row.fetchCursor(db, sql: "SELECT \(key.sql), r.currency, r.total FROM receipts r WHERE \(filter)",
                                       arguments: args)
        while let row = try rows.next() { try body(row[0], row[1], row[2]) }
    }
}

/// What a report can group receipts by, as a column of the receipts table.
public enum ReportKey: Sendable {
    case category, merchant, month, year, status

    /// The key's expression, on receipts aliased `r`.
    var sql: String {
        switch self {
        case .category: return "r.category"
        case .merchant: return "r.merchant"
        case .month: return "substr(r.date, 1, 7)"
        case .year: return "substr(r.date, 1, 4)"
        case .status: return "r.status"
        }
    }
}

/// A receipt's local changes: each verb writes the receipt's row and its outbox entry in this
/// transaction (I6), so no caller can change a receipt without the change being sent.
extension CatalogWriter {
    /// A new receipt (`tagsJSON`: its tags column when the caller has it made already).
    public func addReceipt(_ receipt: Receipt, tagsJSON: String? = nil) throws {
        try insertReceipt(receipt, tagsJSON: try tagsJSON ?? Self.tagsJSON(receipt.tags))
        try recordChange(receipt.id, zone: receipt.zone, .upsert)
    }

    /// The receipt's every column as given.
    public func changeReceipt(_ receipt: Receipt) throws {
        try updateReceipt(receipt)
        try recordChange(receipt.id, zone: receipt.zone, .upsert)
    }

    /// Deletes the receipt (its attachments by cascade); its blobs stay until gc.
    public func removeReceipt(_ id: ReceiptID, zone: String) throws {
        try deleteReceipt(id)
        try recordChange(id, zone: zone, .delete)
    }

    /// Sets the receipt's modification time to this transaction's (it gained an attachment).
    public func touchReceipt(_ id: ReceiptID, zone: String) throws {
        try db.execute(sql: "UPDATE receipts SET modifiedAt = ? WHERE id = ?", arguments: [now, id])
        try recordChange(id, zone: zone, .upsert)
    }
}

/// A receipt as the sync server has it: written without an outbox entry (the server has it).
extension CatalogWriter {
    /// Inserts the receipt or replaces its row (a version pulled from the server), keeping its row number.
    public func savePulled(_ receipt: Receipt) throws {
        try requireTriggers("savePulled")
        try db.cachedStatement(sql: Self.saveReceiptSQL)
            .execute(arguments: StatementArguments([receipt.id] + (try Self.receiptValues(receipt))))
    }

    /// Deletes the receipt the server deleted.
    public func deletePulled(_ id: ReceiptID) throws {
        try deleteReceipt(id)
    }
}

extension CatalogWriter {
    /// Writes every column of the receipt's row, found by id (GRDB's `update` would look for the
    /// primary key, the row number, which a `Receipt` does not carry).
    func updateReceipt(_ receipt: Receipt) throws {
        try ledger?.changing(receipt.id, db)
        try db.cachedStatement(sql: Self.updateReceiptSQL)
            .execute(arguments: StatementArguments(try Self.receiptValues(receipt) + [receipt.id]))
        guard db.changesCount > 0 else {
            throw DatabaseError(resultCode: .SQLITE_ERROR, message: "no receipt \(receipt.id) to update")
        }
    }

    // Made once from `Receipt.columnNames` (a sync pull saves thousands of receipts).
    private static let valueColumns = Receipt.columnNames.dropFirst()
    private static let updateReceiptSQL = "UPDATE receipts SET \(valueColumns.map { "\($0) = ?" }.joined(separator: ", ")) WHERE id = ?"
    private static let saveReceiptSQL = """
        \(insertReceiptSQL)
        ON CONFLICT (id) DO UPDATE SET \(valueColumns.map { "\($0) = excluded.\($0)" }.joined(separator: ", "))
        """

    /// The values of `Receipt.columnNames` but the id, in that order.
    private static func receiptValues(_ r: Receipt) throws -> [(any DatabaseValueConvertible)?] {
        [r.zone, r.merchant, r.date, r.total, r.currency, r.category, r.note, try tagsJSON(r.tags), r.createdAt, r.modifiedAt,
         r.status, r.claim, r.reimbursedOn]
    }

    /// The tags column: the JSON text GRDB's Codable records write.
    public static func tagsJSON(_ tags: [String]) throws -> String {
        String(decoding: try Receipt.databaseJSONEncoder(for: "tags").encode(tags), as: UTF8.self)
    }

    func deleteReceipt(_ id: ReceiptID) throws {
        try requireTriggers("deleteReceipt")
        try db.execute(sql: "DELETE FROM receipts WHERE id = ?", arguments: [id])
    }

    /// Sets the page cache of this connection (KiB): a large import's batches write each index page once.
    public func setCacheSize(kibibytes: Int) throws {
        try db.execute(sql: "PRAGMA cache_size = -\(kibibytes)")
    }
}
