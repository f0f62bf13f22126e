import BlobStore
import GRDB
#if canImport(Glibc)
import Glibc
#endif

public struct CatalogError: Error, CustomStringConvertible, Sendable {
    public enum Code: Sendable, Equatable {
        /// No catalog at the path: not a vault (yet).
        case absent
        /// Written by a newer `receipt` (schema `found` > `known`).
        case newerSchema(found: Int, known: Int)
        /// SQLite cannot read it, or it is not a receipt catalog.
        case unreadable
    }

    public let code: Code
    public let path: String
    public let detail: String

    public var description: String {
        switch code {
        case .absent:
            return "no vault at \(FileSystem.parentPath(path)) (run `receipt init` first)"
        case .newerSchema(let found, let known):
            return "the catalog \(path) has schema version \(found), newer than this receipt knows (\(known)): "
                + "upgrade receipt; nothing was changed"
        case .unreadable:
            return "the catalog \(path) cannot be read (\(detail)): run `receipt fsck --repair` to recover the vault; "
                + "nothing was changed"
        }
    }
}

/// The vault's SQLite catalog, through a GRDB `DatabasePool` in WAL mode (or one connection, for a
/// command that only reads: see `Access`). Access is scoped by closures: the closure given to `write`
/// is one transaction, and the connection never escapes.
public final class Catalog: Sendable {
    public static let fileName = "catalog.sqlite"
    public static var schemaVersion: Int { Schema.version }

    /// How a command will use the catalog.
    public enum Access: Sendable {
        /// A pool: one writer and concurrent readers.
        case readWrite
        /// One connection, for a command that only reads (search, list, stats). A pool's writer
        /// makes sure on opening that a non-empty WAL file exists (GRDB issue 102), and the last
        /// connection of a process deletes that file when it closes: so every command wrote a
        /// transaction and then checkpointed it, four fsyncs and a directory fsync (about 7 ms of a
        /// 30 ms search here). One connection that only reads writes nothing and syncs nothing.
        case reading
    }

    public let path: String
    let pool: any DatabaseWriter

    private init(path: String, pool: any DatabaseWriter) {
        self.path = path
        self.pool = pool
    }

    /// Opens an existing catalog. Refuses, before SQLite touches the file, a catalog written by a
    /// newer version or one whose header is not a receipt catalog's; then refuses one SQLite cannot read.
    /// `upgrading(from, to)` is called when a migration is about to start (it can run for minutes).
    public static func open(at path: String, access: Access = .readWrite,
                            upgrading: (_ from: Int, _ to: Int) -> Void = { _, _ in }) throws -> Catalog {
        if try inspect(path) < schemaVersion {
            // Before a writer opens it (which changes the file even when the migration then stops).
            try BlobKeys.refuseUnconvertible(at: path)
            try ReceiptIDKeys.refuseUnconvertible(at: path)
            try SignatureHalves.refuseUnconvertible(at: path)
        }
        let pool: any DatabaseWriter
        do {
            switch access {
            case .readWrite: pool = try DatabasePool(path: path, configuration: configuration())
            case .reading: pool = try DatabaseQueue(path: path, configuration: configuration())
            }
            try restoreFullSync(pool)
            let version = try pool.read { db in
                _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master")
                return try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
            }
            if version > schemaVersion {
                throw CatalogError(code: .newerSchema(found: version, known: schemaVersion), path: path, detail: "")
            }
            if version < schemaVersion {
                upgrading(version, schemaVersion)
                // Before the first write of the migration: a failed upgrade is rolled back with one `mv`.
                try CatalogCopy.keepBeforeMigration(pool, catalogPath: path, version: schemaVersion)
                try migrate(pool)
            }
        } catch let error as CatalogError {
            throw error
        } catch let error as DatabaseError {
            throw CatalogError(code: .unreadable, path: path, detail: error.message ?? "\(error.resultCode)")
        }
        return Catalog(path: path, pool: pool)
    }

    /// Creates a new catalog at `path` (which must not exist) with the given settings.
    public static func create(at path: String, settings: VaultSettings) throws -> Catalog {
        // SQLite creates a database 0644 (less the umask) and gives its -wal and -shm files the
        // database's permissions: made 0600 first, the catalog and its companions stay private.
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        if fd >= 0 { Glibc.close(fd) }
        let pool = try DatabasePool(path: path, configuration: configuration(pageSize: newPageSize))
        try restoreFullSync(pool)
        try migrate(pool)
        try pool.write { db in
            try settings.save(db)
            try Zone(name: Zone.personal, createdAt: nowMillis()).insert(db)
        }
        return Catalog(path: path, pool: pool)
    }

    private static func migrate(_ pool: any DatabaseWriter) throws {
        try Schema.migrator.migrate(pool)
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA application_id = \(Schema.applicationID)")
            try db.execute(sql: "PRAGMA user_version = \(Schema.version)")
            // Put the header (and so the version) into the main file, where `inspect` reads it.
            try db.checkpoint(.truncate)
        }
    }

    /// The page size of catalogs created from now on (existing ones keep theirs: SQLite fixes it when
    /// the file is created, and WAL mode keeps it). Small blobs live inline in the `blobs` table, one
    /// row of 1–100 KB each: 4 KiB pages held one 2 KB row and a lot of air, 16 KiB pages hold seven.
    /// See "Manifest import" in docs/DESIGN.md.
    static let newPageSize = 16384

    private static func configuration(pageSize: Int? = nil) -> Configuration {
        var config = Configuration()
        config.foreignKeysEnabled = true
        config.busyMode = .timeout(30)
        config.prepareDatabase { db in
            // Before GRDB turns WAL mode on (and so before the file has its first page).
            if let pageSize { try db.execute(sql: "PRAGMA page_size = \(pageSize)") }
            // A committed reference must survive a power cut, not only a crash of this process.
            try db.execute(sql: "PRAGMA synchronous = FULL")
            SearchRank.register(db)
            // The index's words, for `search`'s "did you mean" (SearchSuggestions). In the connection's
            // own temporary schema: nothing is written to the catalog, and a reading connection, which
            // may not create anything once open, has it too. FTS5 finds its table when it is read.
            try db.execute(sql: "CREATE VIRTUAL TABLE IF NOT EXISTS temp.searchVocab USING fts5vocab(main, \(SearchIndex.table), row)")
        }
        return config
    }

    /// GRDB's `DatabasePool` sets `synchronous = NORMAL` on its writer when it turns WAL mode on,
    /// after `prepareDatabase` ran: commits were then durable only at the next checkpoint. The
    /// writer is one connection for the pool's life, so setting it back once holds.
    private static func restoreFullSync(_ pool: any DatabaseWriter) throws {
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
    }

    /// Reads the 100-byte SQLite header without opening the database, so a newer or foreign file is
    /// refused with no change at all (not even a WAL or journal file).
    @discardableResult
    public static func inspect(_ path: String) throws -> Int {
        guard let st = try FileSystem.status(path, followLinks: true) else {
            throw CatalogError(code: .absent, path: path, detail: "")
        }
        guard st.isRegular else { throw CatalogError(code: .unreadable, path: path, detail: "not a regular file") }
        var header = [UInt8](repeating: 0, count: 100)
        let count: Int
        do {
            count = try FileDescriptor.with(path, O_RDONLY) { fd in
                try header.withUnsafeMutableBytes { try fd.readFully(into: $0) }
            }
        } catch let error as PathError {
            throw CatalogError(code: .unreadable, path: path, detail: error.message)
        }
        guard count == 100, header.starts(with: Array("SQLite format 3\0".utf8)) else {
            throw CatalogError(code: .unreadable, path: path, detail: "not an SQLite database")
        }
        func int32(at offset: Int) -> Int {
            Int(Int32(bitPattern: UInt32(header[offset]) << 24 | UInt32(header[offset + 1]) << 16
                | UInt32(header[offset + 2]) << 8 | UInt32(header[offset + 3])))
        }
        let version = int32(at: 60)
        let application = int32(at: 68)
        if application != Int(Schema.applicationID) {
            throw CatalogError(code: .unreadable, path: path, detail: "not a receipt catalog")
        }
        if version > schemaVersion {
            throw CatalogError(code: .newerSchema(found: version, known: schemaVersion), path: path, detail: "")
        }
        return version
    }

    /// One read transaction (a consistent snapshot).
    public func read<T>(_ body: (Database) throws -> T) throws -> T {
        try pool.read(body)
    }

    /// One write transaction: everything in `body` commits together or not at all.
    public func write<T>(_ body: (Database) throws -> T) throws -> T {
        try pool.write(body)
    }

    /// SQLite's own `integrity_check` and `foreign_key_check`; empty when both pass.
    public func integrityProblems() throws -> [String] {
        try pool.read { db in
            var problems = try String.fetchAll(db, sql: "PRAGMA integrity_check").filter { $0 != "ok" }
            let rows = try Row.fetchAll(db, sql: "PRAGMA foreign_key_check")
            for row in rows {
                let table: String = row[0]
                let rowid: Int64? = row[1]
                let parent: String = row[2]
                problems.append("a row \(rowid.map(String.init) ?? "?") of \(table) refers to a missing row of \(parent)")
            }
            return problems
        }
    }

    public func close() throws {
        try pool.close()
    }
}

/// Settings fixed at `receipt init`.
public struct VaultSettings: Sendable, Equatable {
    public var vaultID: String
    public var inlineThreshold: Int64
    public var compression: CompressionMode

    public static let defaultInlineThreshold: Int64 = 100 * 1024

    public init(vaultID: String, inlineThreshold: Int64 = defaultInlineThreshold, compression: CompressionMode = .auto) {
        self.vaultID = vaultID
        self.inlineThreshold = inlineThreshold
        self.compression = compression
    }

    func save(_ db: Database) throws {
        for (key, value) in [("vaultID", vaultID), ("inlineThreshold", String(inlineThreshold)),
                             ("compression", compression.rawValue)] {
            try db.execute(sql: "INSERT OR REPLACE INTO settings(key, value) VALUES (?, ?)", arguments: [key, value])
        }
    }

    public static func load(_ db: Database) throws -> VaultSettings {
        let pairs = try Row.fetchAll(db, sql: "SELECT key, value FROM settings")
        var map: [String: String] = [:]
        for row in pairs { map[row["key"]] = row["value"] }
        return VaultSettings(vaultID: map["vaultID"] ?? "",
                             inlineThreshold: map["inlineThreshold"].flatMap { Int64($0) } ?? defaultInlineThreshold,
                             compression: map["compression"].flatMap { CompressionMode(rawValue: $0) } ?? .auto)
    }
}
