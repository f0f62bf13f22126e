import BlobStore
import GRDB
import ReceiptCatalog
import ReceiptWire
#if canImport(Glibc)
import Glibc
#endif

/// The server's data folder: `server.sqlite` (accounts, zones, shares, records) and the blob tree
/// (`blobs/`, `interim/`), through the same BlobStore as a vault.
public final class ServerCatalog: Sendable {
    public static let fileName = "server.sqlite"
    let pool: SQLitePool
    public let blobs: BlobStore
    public let dataPath: String

    /// Opens (creating when absent) the server data folder at `path`.
    public init(dataPath path: String) throws {
        do {
            try FileSystem.makeDirectories(path, mode: 0o700)
            let store = BlobStore(root: path)
            try store.prepare()
            // Private, as a vault's catalog: SQLite gives -wal and -shm the database file's mode.
            let fd = Glibc.open(FileSystem.join(path, Self.fileName), O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
            if fd >= 0 { Glibc.close(fd) }
            var config = Configuration()
            config.foreignKeysEnabled = true
            config.busyMode = .timeout(30)
            // A write transaction of the rules spans several writer accesses (SQLitePool.transaction).
            config.allowsUnsafeTransactions = true
            config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            let pool = try DatabasePool(path: FileSystem.join(path, Self.fileName), configuration: config)
            // GRDB's pool sets `synchronous = NORMAL` on its writer when it turns WAL mode on, after
            // prepareDatabase ran: an accepted upload or push would be durable only at the next
            // checkpoint. The writer is one connection for the pool's life, so setting it once holds.
            try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            // A catalog a newer receipt migrated is left as it is: this one would misread it.
            if try pool.read({ try Self.migrator.hasBeenSuperseded($0) }) {
                let known = Set(Self.migrator.migrations)
                let unknown = try pool.read { try Self.migrator.appliedIdentifiers($0) }.subtracting(known).sorted()
                try? pool.close()
                throw ServerError(.failed, "the server catalog \(FileSystem.join(path, Self.fileName)) was written by a newer receipt "
                    + "(migrations \(unknown.joined(separator: ", ")) unknown to this one): upgrade receipt; nothing was changed")
            }
            do { try Self.refuseUnconvertibleKeysBeforeMigrating(pool) } catch { try? pool.close(); throw error }
            try Self.keepCopyBeforeMigration(pool, catalogPath: FileSystem.join(path, Self.fileName))
            try Self.migrator.migrate(pool)
            self.pool = SQLitePool(pool, configuration: config)
            self.blobs = store
            self.dataPath = path
        } catch let error as DatabaseError {
            throw ServerError(.failed, "the server catalog in \(path) cannot be opened: \(error.message ?? "\(error.resultCode)")")
        } catch let error as PathError {
            throw ServerError(.failed, "the server data folder \(path) cannot be prepared: \(error.description)")
        }
    }

    public func close() throws { try pool.close() }

    /// A catalog some earlier receipt made that this one is about to migrate is first copied to
    /// `server.sqlite.before-vN` (N: the migrations applied after), so a failed upgrade is rolled back
    /// with one `mv`; a new, empty catalog has nothing to keep. `receipt server gc` removes the copy.
    static func keepCopyBeforeMigration(_ pool: DatabasePool, catalogPath: String) throws {
        let applied = try pool.read { db in try migrator.appliedIdentifiers(db) }
        guard !applied.isEmpty, applied.count < migrator.migrations.count else { return }
        try CatalogCopy.keepBeforeMigration(pool, catalogPath: catalogPath, version: migrator.migrations.count)
    }

    static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("server-v1") { db in
            try db.execute(sql: """
                CREATE TABLE accounts (
                    id INTEGER PRIMARY KEY,
                    name TEXT NOT NULL UNIQUE,
                    tokenHash TEXT NOT NULL UNIQUE CHECK (length(tokenHash) = 64),
                    createdAt INTEGER NOT NULL
                );
                CREATE TABLE zones (
                    id INTEGER PRIMARY KEY,
                    uid TEXT NOT NULL UNIQUE,
                    ownerID INTEGER NOT NULL REFERENCES accounts(id),
                    name TEXT NOT NULL,
                    seq INTEGER NOT NULL DEFAULT 0,
                    createdAt INTEGER NOT NULL,
                    UNIQUE (ownerID, name)
                );
                CREATE TABLE shares (
                    zoneID INTEGER NOT NULL REFERENCES zones(id) ON DELETE CASCADE,
                    accountID INTEGER NOT NULL REFERENCES accounts(id),
                    role TEXT NOT NULL CHECK (role IN ('read', 'write')),
                    PRIMARY KEY (zoneID, accountID)
                ) WITHOUT ROWID;
                CREATE INDEX shares_by_account ON shares(accountID);
                CREATE TABLE records (
                    zoneID INTEGER NOT NULL REFERENCES zones(id) ON DELETE CASCADE,
                    id TEXT NOT NULL,
                    changeTag TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    payload TEXT,
                    PRIMARY KEY (zoneID, id)
                ) WITHOUT ROWID;
                CREATE INDEX records_by_seq ON records(zoneID, seq);
                CREATE TABLE recordBlobs (
                    zoneID INTEGER NOT NULL,
                    recordID TEXT NOT NULL,
                    sha256 TEXT NOT NULL REFERENCES blobs(sha256),
                    PRIMARY KEY (zoneID, recordID, sha256),
                    FOREIGN KEY (zoneID, recordID) REFERENCES records(zoneID, id) ON DELETE CASCADE
                ) WITHOUT ROWID;
                CREATE INDEX recordBlobs_by_blob ON recordBlobs(sha256);
                CREATE TABLE blobs (
                    sha256 TEXT PRIMARY KEY NOT NULL CHECK (length(sha256) = 64),
                    size INTEGER NOT NULL,
                    createdAt INTEGER NOT NULL
                ) WITHOUT ROWID;
                CREATE TABLE possessions (
                    accountID INTEGER NOT NULL REFERENCES accounts(id),
                    sha256 TEXT NOT NULL REFERENCES blobs(sha256),
                    PRIMARY KEY (accountID, sha256)
                ) WITHOUT ROWID;
                """)
        }
        registerAccountMigrations(&m)
        registerWebMigrations(&m)
        registerWebRowsMigration(&m)
        registerTextMigrations(&m)
        registerWebSearchMigration(&m)
        registerTextOwnersMigration(&m)
        registerWebRowsByAddedMigration(&m)
        registerWebReviewMigration(&m)
        registerSearchTextsByRecordMigration(&m)
        registerByteKeysMigration(&m)
        return m
    }
}
