import BlobStore
import GRDB
import GRDBSQLite
import Foundation

// Typed columns (GRDB's record guide: "prefer typed values").

/// A blob address is stored as its 32 bytes (catalog v12, `BlobKeys`): hex only at the edges (file
/// names, the wire, what people read). A row holding anything else is corrupt. The 64-hex text of
/// catalogs v1–v11 is read too, for the salvage of a damaged catalog of an earlier version.
extension BlobID: DatabaseValueConvertible, StatementColumnConvertible {
    public var databaseValue: DatabaseValue { withBytes { Data($0) }.databaseValue }

    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> BlobID? {
        switch dbValue.storage {
        case .blob(let data) where data.count == 32: data.withUnsafeBytes(BlobID.init(bytes:))
        case .string(let text): BlobID(hex: text)
        default: nil
        }
    }

    /// SQL's `receipt_unhex(x)`: the 32 bytes of a hex address (either case); NULL for anything else.
    /// What the vault's and the server's migrations convert with (SQLite's own `unhex` came in 3.41;
    /// the system's may be older).
    public static let bytesFunction = DatabaseFunction("receipt_unhex", argumentCount: 1, pure: true) { values in
        BlobID.fromDatabaseValue(values[0]).map(\.databaseValue)
    }

    /// Read from the statement's column in place (no `Data`, no `DatabaseValue` per address: `list`
    /// reads one per file).
    public init?(sqliteStatement: SQLiteStatement, index: CInt) {
        switch sqlite3_column_type(sqliteStatement, index) {
        case SQLITE_BLOB:
            guard sqlite3_column_bytes(sqliteStatement, index) == 32,
                  let bytes = sqlite3_column_blob(sqliteStatement, index) else { return nil }
            self.init(bytes: UnsafeRawBufferPointer(start: bytes, count: 32))
        case SQLITE_TEXT:
            guard let text = sqlite3_column_text(sqliteStatement, index) else { return nil }
            self.init(hexDigits: UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(sqliteStatement, index))))
        default:
            return nil
        }
    }
}

/// A receipt id is stored as its 16 bytes (catalog v14, `ReceiptIDKeys`; the one place that says so):
/// hex only at the edges. A row holding anything else is corrupt (fsck reports it,
/// `Catalog.malformedReceiptIDs`). The text of catalogs v1–v12 is read too, for the salvage of a
/// damaged catalog of an earlier version.
extension ReceiptID: DatabaseValueConvertible, StatementColumnConvertible {
    public var databaseValue: DatabaseValue { withUnsafeBytes(of: uuid.uuid) { Data($0) }.databaseValue }

    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> ReceiptID? {
        switch dbValue.storage {
        case .blob(let data) where data.count == 16: data.withUnsafeBytes(ReceiptID.init(bytes:))
        case .string(let text): ReceiptID(text)
        default: nil
        }
    }

    /// SQL's `receipt_id_bytes(x)`: the 16 bytes of a UUID's text (either case); NULL for anything
    /// else. What the vault's and the server's migrations convert with.
    public static let bytesFunction = DatabaseFunction("receipt_id_bytes", argumentCount: 1, pure: true) { values in
        ReceiptID.fromDatabaseValue(values[0])?.databaseValue
    }

    /// Read from the statement's column in place (no `Data` per id: `list` reads one per receipt).
    public init?(sqliteStatement: SQLiteStatement, index: CInt) {
        switch sqlite3_column_type(sqliteStatement, index) {
        case SQLITE_BLOB:
            guard sqlite3_column_bytes(sqliteStatement, index) == 16,
                  let bytes = sqlite3_column_blob(sqliteStatement, index) else { return nil }
            self.init(bytes: UnsafeRawBufferPointer(start: bytes, count: 16))
        case SQLITE_TEXT:
            guard let text = sqlite3_column_text(sqliteStatement, index) else { return nil }
            self.init(utf8: UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(sqliteStatement, index))))
        default:
            return nil
        }
    }

    /// SQL showing the id in column `expression` as a person reads it (lowercase 8-4-4-4-12), and a
    /// value that is no 16 bytes as its text: what fsck prints of a row it reports.
    public static func shown(_ expression: String) -> String {
        let hex = "lower(hex(\(expression)))"
        let parts = [(1, 8), (9, 4), (13, 4), (17, 4), (21, 12)].map { "substr(\(hex), \($0.0), \($0.1))" }
        return "CASE WHEN typeof(\(expression)) = 'blob' AND length(\(expression)) = 16 THEN "
            + parts.joined(separator: " || '-' || ") + " ELSE CAST(\(expression) AS TEXT) END"
    }
}

extension RowBinder {
    /// A receipt id, bound as the column stores it (`ReceiptID`'s `databaseValue`).
    public mutating func receiptID(_ id: ReceiptID) { uuid(id.uuid) }
}

extension Row {
    /// The blob address in a column; nil where it holds none (a damaged row is fsck's to report, and
    /// GRDB's typed subscript would trap on it).
    public func blobID(_ index: Int) -> BlobID? { BlobID.fromDatabaseValue(self[index] as DatabaseValue) }
    public func blobID(_ column: String) -> BlobID? { BlobID.fromDatabaseValue(self[column] as DatabaseValue) }
}

extension BlobID {
    /// A value every stored address sorts after (the empty blob): the start of an address cursor.
    public static var beforeAll: DatabaseValue { Data().databaseValue }
}

extension BlobEncoding: DatabaseValueConvertible {}

/// What this vault's account may do in a zone: its own zones are `owner`; a zone shared with it is
/// `read` or `write` (the server's `WireRole`, by raw value).
public enum ZoneRole: String, Sendable, Codable, CaseIterable, DatabaseValueConvertible {
    case owner, read, write

    public var canWrite: Bool { self != .read }
}
