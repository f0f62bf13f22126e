import BlobStore
import Foundation
import GRDBSQLite
import ReceiptCatalog
#if canImport(Glibc)
import Glibc
#endif

/// A SQLite database of the manifest import's own, in `interim/<random>.plan.interim`: the checked
/// plan, written in pass 1 and read back in pass 2, so that memory does not grow with the manifest
/// (held in memory, the plan took 414 MB at a million rows). It is scratch: no journal, no fsync (a
/// crash loses the import's progress, never the vault's), and never read by another process. The
/// import holds an `flock` on it, as on a staging file, so gc and fsck see it owned; a killed import's
/// plan is removed by the next manifest import (and, as any stale staging file, by gc and fsck).
final class ManifestPlanFile {
    static let suffix = ".plan.interim"

    let path: String
    private var lock: FileDescriptor?
    private var db: OpaquePointer?
    private var statements: [OpaquePointer] = []

    init(interim: String) throws {
        try FileSystem.makeDirectories(interim, mode: 0o700)
        Self.removeStale(in: interim)
        path = interim + "/" + SecureRandom.hex(16) + Self.suffix
        // Created under a name the next import does not match and locked before it takes its plan
        // name: a plan file is never seen unlocked while its import runs, so any unlocked one is stale.
        let unnamed = path + ".new"
        let fd = try FileDescriptor.open(unnamed, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode: 0o600)
        lock = fd
        do {
            try fd.lock()
            try FileSystem.rename(unnamed, path)
            var handle: OpaquePointer?
            let code = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil)
            db = handle
            guard code == SQLITE_OK else { throw failure(code, "open") }
            // Each page of the plan's two randomly keyed indexes (receipt ids, contents) is read
            // back from the page cache of the system when SQLite's is full: memory stays at this.
            try execute("""
                PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA locking_mode = EXCLUSIVE;
                PRAGMA cache_size = -4096; PRAGMA temp_store = FILE;
                """)
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// Closes and removes the file (after SQLite closed it: closing our descriptor first would drop
    /// SQLite's own locks on it).
    func close() {
        for statement in statements { sqlite3_finalize(statement) }
        statements = []
        if let db { sqlite3_close_v2(db) }
        db = nil
        if let lock {
            try? FileSystem.remove(path)
            lock.close()
        }
        lock = nil
    }

    /// Plan files whose import is gone (killed: nobody holds their lock). A `.new` one killed between
    /// its creation and its rename is left to gc and fsck, as any stale staging file.
    static func removeStale(in interim: String) {
        guard let names = try? FileSystem.contents(of: interim) else { return }
        for name in names where name.hasSuffix(suffix) {
            let path = interim + "/" + name
            guard let fd = try? FileDescriptor.open(path, O_RDONLY | O_CLOEXEC) else { continue }
            defer { fd.close() }
            if (try? fd.tryLock()) == true { try? FileSystem.remove(path) }
        }
    }

    func execute(_ sql: String) throws {
        let code = sqlite3_exec(db, sql, nil, nil, nil)
        guard code == SQLITE_OK else { throw failure(code, sql) }
    }

    /// A statement prepared once, finalized with the file.
    func prepare(_ sql: String) throws -> PlanStatement {
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v2(db, sql, -1, &statement, nil)
        guard code == SQLITE_OK, let statement else { throw failure(code, sql) }
        statements.append(statement)
        return PlanStatement(handle: statement, file: self)
    }

    var changes: Int { Int(sqlite3_changes(db)) }

    /// Pass 1 is over: its transaction commits (to the file, without fsync), and the page cache, which
    /// held the pages of pass 1's randomly keyed indexes, shrinks to what pass 2's reading in order
    /// needs: 4 MiB less for the rest of the import.
    func finishWriting() throws {
        if sqlite3_get_autocommit(db) == 0 { try execute("COMMIT") }
        try execute("PRAGMA cache_size = -256")
    }

    func failure(_ code: Int32, _ what: String) -> VaultError {
        let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "code \(code)"
        return VaultError(.io, "the manifest import's plan file \(path) failed (\(message))")
    }
}

/// One prepared statement of the plan: bind by position from 1, step, read columns from 0.
struct PlanStatement {
    let handle: OpaquePointer
    unowned let file: ManifestPlanFile

    static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    /// Resets the statement and binds the values `bind` gives, in order.
    func bind(_ bind: (inout RowBinder) -> Void) {
        sqlite3_reset(handle)
        var binder = RowBinder(handle: handle)
        bind(&binder)
    }

    /// Runs a statement that returns no row.
    func run(_ bind: (inout RowBinder) -> Void) throws {
        sqlite3_reset(handle)
        var binder = RowBinder(handle: handle)
        bind(&binder)
        // A value SQLite could not take must not run with the last row's value.
        let code = binder.failure == SQLITE_OK ? sqlite3_step(handle) : binder.failure
        sqlite3_reset(handle)
        guard code == SQLITE_DONE else { throw file.failure(code, "a statement") }
    }

    func reset() { sqlite3_reset(handle) }

    /// The next row (true) or the end (false).
    func step() throws -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let code: throw file.failure(code, "a query")
        }
    }

    func int(_ column: Int32) -> Int { Int(sqlite3_column_int64(handle, column)) }
    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    func bool(_ column: Int32) -> Bool { sqlite3_column_int64(handle, column) != 0 }
    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    func text(_ column: Int32) -> String? {
        guard let bytes = sqlite3_column_text(handle, column) else { return nil }
        return String(cString: bytes)
    }

    /// `text(column)`, or `last` when the column holds the same text: rows of one folder share one string.
    func text(_ column: Int32, reusing last: String?) -> String? {
        guard let bytes = sqlite3_column_text(handle, column) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        if var last, last.utf8.count == count,
           count == 0 || last.withUTF8({ $0.baseAddress.map { memcmp($0, bytes, count) == 0 } ?? false }) {
            return last
        }
        return String(cString: bytes)
    }

    func bytes(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let start = sqlite3_column_blob(handle, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: start, count: count))
    }

    func uuid(_ column: Int32) -> UUID {
        let b = bytes(column)
        guard b.count == 16 else { return UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) }
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    func blobID(_ column: Int32) -> BlobID {
        let b = bytes(column)
        return BlobID(digest: b.count == 32 ? b : [UInt8](repeating: 0, count: 32))
    }
}
