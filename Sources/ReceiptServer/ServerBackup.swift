import BlobStore
import Foundation
import GRDB
import ReceiptCatalog
import ReceiptText
#if canImport(Glibc)
import Glibc
#endif

/// What a server backup holds, written last (`manifest.json`): a folder without it is no backup.
/// The counts let `--check` tell a backup that lost files from a whole one.
public struct ServerBackupManifest: Codable, Sendable, Equatable {
    public var format = 1
    public var createdAt: String
    /// `sqlite` (the data folder's `server.sqlite`, copied) or `postgres` (a `pg_dump -Fc` archive).
    public var catalog: String
    public var catalogFile: String
    public var catalogBytes: Int64
    public var catalogSHA256: String
    public var blobs: Int
    public var blobBytes: Int64
    /// Of `blobs`, how many share their file with the data folder (hard links) rather than copy it.
    public var linkedBlobs: Int
}

/// `receipt server backup`, `backup --check` and `restore` (docs/DESIGN.md, "Server backup").
///
/// Consistent while the server runs: the catalog is read in one transaction (SQLite's online backup
/// API, or `pg_dump`'s snapshot), then the blob tree is linked. An upload installs its file before
/// the record that references it can be pushed, and gc (which alone removes blob files) is held off
/// by its lock for the whole backup, so every blob the catalog's moment references is there.
public enum ServerBackup {
    public static let manifestName = "manifest.json"
    static let sqliteDump = ServerCatalog.fileName
    static let postgresDump = "catalog.pgdump"
    /// pg_dump of a large household's catalog takes minutes, not days; a hung one must not hold gc off forever.
    static let toolLimits = ToolLimits(seconds: 6 * 3600, memoryBytes: 8 << 30)

    public static func take(dataPath: String, database: ServerDatabase, destination: String) async throws -> ServerBackupManifest {
        let store = BlobStore(root: dataPath)
        let embedded = FileSystem.join(dataPath, ServerCatalog.fileName)
        switch database {
        case .embedded where !FileSystem.exists(embedded):
            throw ServerError.bad("\(dataPath) is not a receipt server data folder (it has no \(ServerCatalog.fileName))")
        case .postgres where !FileSystem.exists(store.blobsPath):
            throw ServerError.bad("\(dataPath) is not a receipt server data folder (it has no blobs folder)")
        default: break
        }
        try refuseNonEmpty(destination, doing: "back up into")
        let lock = try ServerRules.gcLock(dataPath)
        defer { lock.close() }
        let created = !FileSystem.exists(destination)
        do {
            try FileSystem.makeDirectories(destination, mode: 0o700)
            let catalogFile: String
            switch database {
            case .embedded:
                catalogFile = sqliteDump
                let live = try DatabaseQueue(path: embedded)
                defer { try? live.close() }
                try CatalogCopy.write(from: live, to: FileSystem.join(destination, catalogFile))
            case .postgres(let url):
                catalogFile = postgresDump
                let dump = FileSystem.join(destination, catalogFile)
                try runPostgresTool("pg_dump", ["--format=custom", "--no-owner", "--no-privileges", "--file", dump], url: url)
                try FileDescriptor.with(dump, O_RDONLY) { try $0.sync() }
            }
            let copied = try copyBlobs(from: store, to: BlobStore(root: destination))
            let catalogPath = FileSystem.join(destination, catalogFile)
            let (hash, bytes) = try SHA256Hasher.hash(fileAt: catalogPath)
            let manifest = ServerBackupManifest(
                createdAt: ISO8601DateFormatter().string(from: Date()), catalog: database == .embedded ? "sqlite" : "postgres",
                catalogFile: catalogFile, catalogBytes: bytes, catalogSHA256: hash.hex,
                blobs: copied.blobs, blobBytes: copied.bytes, linkedBlobs: copied.linked)
            try writeManifest(manifest, in: destination)
            return manifest
        } catch {
            // Whatever was made of the backup goes: a folder without its manifest is no backup.
            if created { try? FileManager.default.removeItem(atPath: destination) } else { try? emptyFolder(destination) }
            throw error
        }
    }

    /// Every problem with the backup at `path`; none means it restores whole.
    public static func check(_ path: String) throws -> (manifest: ServerBackupManifest, problems: [String]) {
        let manifest = try readManifest(path)
        var problems: [String] = []
        let catalogPath = FileSystem.join(path, manifest.catalogFile)
        if case let (hash, bytes)? = try? SHA256Hasher.hash(fileAt: catalogPath) {
            if hash.hex != manifest.catalogSHA256 || bytes != manifest.catalogBytes {
                problems.append("\(catalogPath) is not the catalog the backup wrote (\(bytes) bytes, sha256 \(hash.hex))")
            }
        } else {
            problems.append("\(catalogPath) is missing or unreadable")
        }
        let store = BlobStore(root: path)
        var blobs = 0, bytes: Int64 = 0
        var present = Set<String>()
        try store.forEachFile { file in
            guard let id = file.id else { return problems.append("\(file.path) is not a blob's file") }
            do {
                guard try store.verifyEitherEncoding(id) != nil else { return problems.append("\(file.path) is not a blob's file") }
                blobs += 1
                bytes += file.storedSize
                present.insert(id.hex)
            } catch {
                problems.append("\(file.path) is damaged: \(error)")
            }
        }
        if blobs != manifest.blobs || bytes != manifest.blobBytes {
            problems.append("the backup holds \(blobs) blob(s) of \(bytes) bytes; its manifest says \(manifest.blobs) of \(manifest.blobBytes)")
        }
        if manifest.catalog == "sqlite" && problems.isEmpty {
            problems += try ServerCatalog.checkBackupCopy(catalogPath, blobs: present)
        }
        return (manifest, problems)
    }

    /// Restores the backup at `source` into the new data folder `dataPath` (absent or empty) and,
    /// for a PostgreSQL backup, the empty database `database`. Checked first; built beside the
    /// target and renamed into place, so a failure leaves the target as it was.
    public static func restore(from source: String, dataPath: String, database: ServerDatabase) async throws -> ServerBackupManifest {
        let (manifest, problems) = try check(source)
        if let first = problems.first {
            throw ServerError.bad("the backup \(source) fails its check (\(first)\(problems.count > 1 ? ", and \(problems.count - 1) more" : "")); nothing was restored")
        }
        switch (manifest.catalog, database) {
        case ("sqlite", .postgres):
            throw ServerError.bad("the backup \(source) holds an embedded SQLite catalog: restore it without --database")
        case ("postgres", .embedded):
            throw ServerError.bad("the backup \(source) holds a PostgreSQL catalog: give --database postgres://… (an empty database)")
        default: break
        }
        try refuseNonEmpty(dataPath, doing: "restore into")
        if case .postgres(let url) = database {
            let tables = try runPostgresTool("psql", ["-X", "-A", "-t", "-c", PostgresServerStore.countTablesSQL], url: url)
            if tables.trimmingCharacters(in: .whitespacesAndNewlines) != "0" {
                throw ServerError.bad("refusing to restore into the database \(url): it is not empty")
            }
        }
        let finalPath = dataPath.hasSuffix("/") ? String(dataPath.dropLast()) : dataPath
        let building = finalPath + ".restoring-\(getpid())"
        do {
            try FileSystem.makeDirectories(building, mode: 0o700)
            let target = BlobStore(root: building)
            try target.prepare()
            _ = try copyBlobs(from: BlobStore(root: source), to: target)
            let catalogPath = FileSystem.join(source, manifest.catalogFile)
            switch database {
            case .embedded:
                let copy = try DatabaseQueue(path: catalogPath, configuration: { var c = Configuration(); c.readonly = true; return c }())
                defer { try? copy.close() }
                try CatalogCopy.write(from: copy, to: FileSystem.join(building, ServerCatalog.fileName))
            case .postgres(let url):
                try runPostgresTool("pg_restore", ["--no-owner", "--no-privileges", "--single-transaction", "--exit-on-error",
                                                   "--dbname", url.database, catalogPath], url: url)
            }
            // rename(2) replaces an empty folder: the target appears whole, or stays as it was.
            try FileSystem.rename(building, finalPath)
            try FileSystem.syncDirectory(FileSystem.parentPath(finalPath))
        } catch {
            try? FileManager.default.removeItem(atPath: building)
            throw error
        }
        return manifest
    }

    /// Links (or, across file systems, copies and fsyncs) every blob file of `source` into `target`.
    static func copyBlobs(from source: BlobStore, to target: BlobStore) throws -> (blobs: Int, bytes: Int64, linked: Int) {
        var blobs = 0, bytes: Int64 = 0, linked = 0
        var folders = Set<String>()
        try FileSystem.makeDirectories(target.blobsPath, mode: 0o700)
        try source.forEachFile { file in
            guard let id = file.id else { return }  // a stray file is no blob: gc and fsck deal with it
            let destination = target.path(for: id)
            let folder = FileSystem.parentPath(destination)
            if folders.insert(folder).inserted { try FileSystem.makeDirectories(folder, mode: 0o700) }
            do {
                try FileSystem.link(file.path, destination)
                linked += 1
            } catch let error as PathError where error.errno == EXDEV || error.errno == EPERM || error.errno == EMLINK {
                try copyFile(file.path, to: destination)
            }
            blobs += 1
            bytes += file.storedSize
        }
        for folder in folders.sorted() { try FileSystem.syncDirectory(folder) }
        try FileSystem.syncDirectory(target.blobsPath)
        return (blobs, bytes, linked)
    }

    /// A byte-for-byte copy, fsynced, made private and under a temporary name until complete.
    static func copyFile(_ source: String, to destination: String) throws {
        let partial = destination + ".partial"
        try FileDescriptor.with(source, O_RDONLY) { input in
            try FileDescriptor.with(partial, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o600) { output in
                var buffer = [UInt8](repeating: 0, count: BlobStore.chunkSize)
                while true {
                    let count = try buffer.withUnsafeMutableBytes { try input.read(into: $0) }
                    if count == 0 { break }
                    try buffer.withUnsafeBytes { try output.write(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
                }
                try output.sync()
            }
        }
        try FileSystem.rename(partial, destination)
    }

    static func refuseNonEmpty(_ path: String, doing: String) throws {
        guard let status = try FileSystem.status(path, followLinks: true) else { return }
        guard status.isDirectory else { throw ServerError.bad("refusing to \(doing) \(path): it is a file, not a folder") }
        if !(try FileSystem.contents(of: path)).isEmpty { throw ServerError.bad("refusing to \(doing) \(path): it is not empty") }
    }

    static func emptyFolder(_ path: String) throws {
        for name in try FileSystem.contents(of: path) { try FileManager.default.removeItem(atPath: FileSystem.join(path, name)) }
    }

    static func writeManifest(_ manifest: ServerBackupManifest, in folder: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let bytes = Array(try encoder.encode(manifest)) + [0x0A]
        let path = FileSystem.join(folder, manifestName)
        try FileDescriptor.with(path + ".partial", O_WRONLY | O_CREAT | O_TRUNC, mode: 0o600) { fd in
            try fd.write(bytes)
            try fd.sync()
        }
        try FileSystem.rename(path + ".partial", path)
        try FileSystem.syncDirectory(folder)
    }

    static func readManifest(_ folder: String) throws -> ServerBackupManifest {
        let path = FileSystem.join(folder, manifestName)
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ServerError.bad("\(folder) is not a receipt server backup (it has no readable \(manifestName))")
        }
        do {
            let manifest = try JSONDecoder().decode(ServerBackupManifest.self, from: data)
            guard manifest.format == 1, ["sqlite", "postgres"].contains(manifest.catalog),
                  [sqliteDump, postgresDump].contains(manifest.catalogFile) else {
                throw ServerError.bad("\(path) is a backup format this receipt does not know: upgrade receipt")
            }
            return manifest
        } catch let error as ServerError {
            throw error
        } catch {
            throw ServerError.bad("\(path) is not a receipt server backup's manifest (\(error))")
        }
    }

    /// Runs a PostgreSQL client tool on `url`'s database; the password goes in the environment,
    /// never on a command line others can read in /proc. Returns its stdout.
    @discardableResult
    static func runPostgresTool(_ name: String, _ args: [String], url: PostgresURL) throws -> String {
        guard let executable = ToolRun.locate(name, path: ProcessInfo.processInfo.environment["PATH"]) else {
            throw ServerError.bad("\(name) is not installed: install Debian's postgresql-client")
        }
        var environment = ["PGHOST": url.host, "PGPORT": "\(url.port)", "PGUSER": url.user, "PGDATABASE": url.database]
        environment["PGPASSWORD"] = url.password
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("receipt-\(name)-\(getpid())-\(UInt64.random(in: 0...UInt64.max))").path
        defer { try? FileSystem.remove(output) }
        let outcome = ToolRun.run(executable, args, in: "/", stdoutPath: output, limits: toolLimits, environment: environment)
        guard outcome.succeeded else { throw ServerError(.failed, "\(name) on \(url) \(outcome.reason)") }
        return (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
    }
}
