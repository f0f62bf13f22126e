import BlobStore
import Foundation
import GRDB
import GRDBSQLite

/// Statements the catalog runs once a row, prepared once per transaction and bound and stepped
/// through SQLite's C API: GRDB's record layer (SQL generation, Codable encoding, boxing every
/// argument) costs more than SQLite itself at 100,000 rows. Every caller of `CatalogWriter` gets it.
final class RowStatements {
    private var held: [Int: Statement] = [:]

    func handle(_ slot: Int, _ sql: String, _ db: Database) throws -> SQLiteStatement {
        if let statement = held[slot] { return statement.sqliteStatement }
        let statement = try db.cachedStatement(sql: sql)
        held[slot] = statement
        return statement.sqliteStatement
    }

    /// Binds the values in order (each copied by SQLite) and runs the statement once; returns the
    /// rows it changed.
    func run(_ slot: Int, _ sql: String, _ db: Database, _ bind: (inout RowBinder) -> Void) throws -> Int {
        let handle = try handle(slot, sql, db)
        sqlite3_reset(handle)
        var binder = RowBinder(handle: handle)
        bind(&binder)
        // A value SQLite could not take (too big, no memory) must not run with the last row's value.
        let code = binder.failure == SQLITE_OK ? sqlite3_step(handle) : binder.failure
        guard code == SQLITE_DONE else {
            let message = String(cString: sqlite3_errmsg(db.sqliteConnection))
            sqlite3_reset(handle)
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: sql)
        }
        sqlite3_reset(handle)
        return db.changesCount
    }

    /// The first column of the first row of a query taking the arguments `bind` binds, as text (nil:
    /// no row, or NULL).
    static func text(_ db: Database, _ sql: String, _ bind: (inout RowBinder) -> Void) throws -> String? {
        let handle = try db.cachedStatement(sql: sql).sqliteStatement
        sqlite3_reset(handle)
        defer { sqlite3_reset(handle) }
        var binder = RowBinder(handle: handle)
        bind(&binder)
        var code = binder.failure
        if code == SQLITE_OK { code = sqlite3_step(handle) }
        switch code {
        case SQLITE_ROW:
            return sqlite3_column_text(handle, 0).map { String(cString: $0) }
        case SQLITE_DONE:
            return nil
        default:
            throw DatabaseError(resultCode: ResultCode(rawValue: code),
                                message: String(cString: sqlite3_errmsg(db.sqliteConnection)), sql: sql)
        }
    }
}

/// Binds a statement's parameters in order, each value copied by SQLite: the one binder of the
/// catalog's row statements and of the manifest import's plan file (typed, so no value is boxed or
/// cast at run time).
public struct RowBinder {
    let handle: OpaquePointer
    private var index: Int32 = 0
    /// The first binding SQLite refused.
    public private(set) var failure = SQLITE_OK

    public init(handle: OpaquePointer) { self.handle = handle }

    /// Text without NUL (checked before: paths, names and metadata refuse it; the rest is ours).
    public mutating func text(_ value: String?) {
        index += 1
        if let value {
            check(sqlite3_bind_text(handle, index, value, -1, Self.transient))
        } else {
            check(sqlite3_bind_null(handle, index))
        }
    }

    public mutating func int(_ value: Int64?) {
        index += 1
        if let value {
            check(sqlite3_bind_int64(handle, index, value))
        } else {
            check(sqlite3_bind_null(handle, index))
        }
    }

    public mutating func int(_ value: Int) { int(Int64(value)) }

    public mutating func bool(_ value: Bool) { int(value ? 1 : 0) }

    /// The 16 bytes of a UUID, as a blob.
    public mutating func uuid(_ value: UUID) {
        index += 1
        let at = index
        check(withUnsafeBytes(of: value.uuid) { sqlite3_bind_blob(handle, at, $0.baseAddress, 16, Self.transient) })
    }

    /// The 32 bytes of a blob address, as a blob.
    public mutating func bytes(_ value: BlobID) {
        index += 1
        let at = index
        check(value.withBytes { sqlite3_bind_blob(handle, at, $0.baseAddress, 32, Self.transient) })
    }

    public mutating func blob(_ bytes: [UInt8]?) {
        index += 1
        guard let bytes else {
            check(sqlite3_bind_null(handle, index))
            return
        }
        // An empty file is an empty blob, not NULL (which would say "not inline").
        if bytes.isEmpty {
            check(sqlite3_bind_zeroblob(handle, index, 0))
            return
        }
        check(bytes.withUnsafeBytes { sqlite3_bind_blob64(handle, index, $0.baseAddress, UInt64($0.count), Self.transient) })
    }

    private mutating func check(_ code: Int32) {
        if code != SQLITE_OK && failure == SQLITE_OK { failure = code }
    }

    static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
}

/// `count` SQL parameters, comma-separated (`?,?,?`): GRDB's `databaseQuestionMarks` joins an
/// array of strings, ~0.1 ms for the 256 of a `list` chunk (7 % of a month's `list` at a million).
func placeholders(_ count: Int) -> String {
    count <= 0 ? "" : String(repeating: "?,", count: count - 1) + "?"
}

/// The rows of `sql(marks)` for `values` 500 at a time, `marks` the part's placeholders for its
/// `IN (…)` and `leading` the arguments before them, each row handed to `body` from a cursor: a
/// statement binds at most 32,766 variables (999 before SQLite 3.32), and a vault's grouped receipts
/// are 195,000 at a million.
func forEachRow<Value: DatabaseValueConvertible>(_ db: Database, in values: [Value], leading: StatementArguments = [],
                                                 sql: (_ marks: String) -> String, _ body: (Row) throws -> Void) throws {
    for start in stride(from: 0, to: values.count, by: 500) {
        let part = values[start..<min(start + 500, values.count)]
        let cursor = try Row.fetchCursor(db, sql: sql(placeholders(part.count)), arguments: leading + StatementArguments(part))
        while let row = try cursor.next() { try body(row) }
    }
}
