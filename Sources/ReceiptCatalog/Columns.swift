import BlobStore
import GRDB
import GRDBSQLite
import Foundation

// Typed columns (GRDB's record guide: "prefer typed values"). Each type is stored exactly as the
// text the catalog always held, so the schema and every JSON shape stay as they were.

/// A blob address is stored as its lowercase 64-hex text; a row holding anything else is corrupt.
extension BlobID: DatabaseValueConvertible, StatementColumnConvertible {
    public var databaseValue: DatabaseValue { hex.databaseValue }

    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> BlobID? {
        String.fromDatabaseValue(dbValue).flatMap(BlobID.init(hex:))
    }

    /// Read from the statement's column text in place (no `String`, no `DatabaseValue` per address:
    /// `list` reads one per file).
    public init?(sqliteStatement: SQLiteStatement, index: CInt) {
        guard sqlite3_column_type(sqliteStatement, index) == SQLITE_TEXT,
              let text = sqlite3_column_text(sqliteStatement, index) else { return nil }
        self.init(hexDigits: UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(sqliteStatement, index))))
    }
}

/// A receipt id is stored as its lowercase text (the one place that says so: a 16-byte column would
/// change only this); a row holding anything else is corrupt (fsck reports it, `Catalog.malformedReceiptIDs`).
extension ReceiptID: DatabaseValueConvertible, StatementColumnConvertible {
    public var databaseValue: DatabaseValue { text.databaseValue }

    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> ReceiptID? {
        String.fromDatabaseValue(dbValue).flatMap(ReceiptID.init)
    }

    /// Read from the statement's column text in place (no `String` per id: `list` reads one per receipt).
    public init?(sqliteStatement: SQLiteStatement, index: CInt) {
        guard sqlite3_column_type(sqliteStatement, index) == SQLITE_TEXT,
              let text = sqlite3_column_text(sqliteStatement, index) else { return nil }
        self.init(utf8: UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(sqliteStatement, index))))
    }
}

extension RowBinder {
    /// A receipt id, bound as the column stores it (`ReceiptID`'s `databaseValue`).
    public mutating func receiptID(_ id: ReceiptID) { text(id.text) }
}

extension BlobEncoding: DatabaseValueConvertible {}

/// What this vault's account may do in a zone: its own zones are `owner`; a zone shared with it is
/// `read` or `write` (the server's `WireRole`, by raw value).
public enum ZoneRole: String, Sendable, Codable, CaseIterable, DatabaseValueConvertible {
    case owner, read, write

    public var canWrite: Bool { self != .read }
}

