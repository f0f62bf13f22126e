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
