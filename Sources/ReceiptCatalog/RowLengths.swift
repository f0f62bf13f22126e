import GRDBSQLite

/// Each search index row's length in tokens (all columns), read from FTS5's `receiptSearch_docsize`
/// table by one cursor that walks forward in rowid order.
///
/// Why: FTS5's `xColumnSize` looks each row's length up with its own seek into that table (about
/// 1.4 µs a row here), and a common word matches half of a 100,000-receipt vault: 53,000 seeks were
/// 70 of a search's 80 ms. A match is visited in rowid order, so the next length is almost always a
/// few rows further on: stepping there costs a fraction of a seek. A row further away than
/// `maximumSteps`, or behind the cursor (a filtered search may visit rows in date order), is sought
/// afresh. `nil` (the caller asks FTS5 instead) when the table cannot be read as expected.
///
/// The lengths are FTS5's own: `docsize.sz` holds one varint per column (SQLite's varint format,
/// which FTS5 uses), and `xColumnSize(-1)` is their sum (receiptSearch has no UNINDEXED column).
final class RowLengths {
    private var statement: OpaquePointer?
    /// The rowid the statement's current row holds; nil before its first step or after its last row.
    private var current: Int64?
    private static let maximumSteps: Int64 = 32

    init?(_ db: OpaquePointer?) {
        guard let db else { return nil }
        let sql = "SELECT id, sz FROM main.receiptSearch_docsize WHERE id >= ? ORDER BY id"
        guard sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK else {
            sqlite3_finalize(statement)
            return nil
        }
    }

    deinit { sqlite3_finalize(statement) }

    /// The length of `rowid`'s row, or nil when the table has no such row or could not be read.
    func tokens(of rowid: Int64) -> Int32? {
        guard let statement else { return nil }
        if let at = current, at <= rowid, rowid - at <= Self.maximumSteps {
            var here = at
            while here < rowid {
                guard sqlite3_step(statement) == SQLITE_ROW else { current = nil; return nil }
                here = sqlite3_column_int64(statement, 0)
            }
            current = here
        } else {
            sqlite3_reset(statement)
            sqlite3_bind_int64(statement, 1, rowid)
            guard sqlite3_step(statement) == SQLITE_ROW else { current = nil; return nil }
            current = sqlite3_column_int64(statement, 0)
        }
        guard current == rowid else { return nil }
        return Self.sum(statement)
    }

    /// The sum of the varints of the current row's `sz` blob; nil when it is not a blob of varints.
    private static func sum(_ statement: OpaquePointer) -> Int32? {
        guard let blob = sqlite3_column_blob(statement, 1) else { return 0 }
        let bytes = UnsafeRawBufferPointer(start: blob, count: Int(sqlite3_column_bytes(statement, 1)))
        var total: Int64 = 0
        var i = 0
        while i < bytes.count {
            var value: UInt64 = 0
            var length = 0
            while true {
                guard i < bytes.count else { return nil }
                let byte = bytes[i]
                i += 1
                length += 1
                if length == 9 { value = (value << 8) | UInt64(byte); break }
                value = (value << 7) | UInt64(byte & 0x7f)
                if byte & 0x80 == 0 { break }
            }
            // FTS5 reads each column's size as a 32-bit int.
            total += Int64(Int32(truncatingIfNeeded: value))
        }
        return Int32(truncatingIfNeeded: total)
    }
}
