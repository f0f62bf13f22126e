import BlobStore
import Foundation
import GRDB

/// Consistent, durable copies of a SQLite catalog taken while it may be in use: the copy a
/// migration keeps of the file it is about to change (`catalog.sqlite.before-vN`, for rolling an
/// upgrade back with one `mv`), and the catalog of a server backup.
public enum CatalogCopy {
    /// Copies the database `source` reads into a new file at `destination` (which must not exist),
    /// private (0600), through SQLite's online backup API: one read transaction, so the copy is the
    /// database at one moment even while writers go on. The file is complete and fsynced before it
    /// appears under its name, and its folder is fsynced after, so a power cut leaves it whole or absent.
    public static func write(from source: any DatabaseReader, to destination: String) throws {
        let partial = destination + ".partial-\(getpid())"
        try FileSystem.remove(partial)
        // SQLite would create the file 0644 less the umask: a catalog holds every account's data.
        try FileDescriptor.with(partial, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600) { _ in }
        do {
            // A rollback-journal connection: the copy is one file, with no -wal beside it to lose.
            let queue = try DatabaseQueue(path: partial)
            try source.backup(to: queue)
            try queue.close()
            try FileDescriptor.with(partial, O_RDONLY) { try $0.sync() }
            // link(2), not rename: a copy already under that name (another process's, of the same
            // moment before the same migration) is kept rather than replaced.
            try FileSystem.link(partial, destination)
            try FileSystem.remove(partial)
            try FileSystem.syncDirectory(FileSystem.parentPath(destination))
        } catch {
            try? FileSystem.remove(partial)
            try? FileSystem.remove(partial + "-journal")
            throw error
        }
    }

    /// Where the copy of `catalogPath` made before migrating it to `version` lives.
    public static func beforeMigrationPath(_ catalogPath: String, version: Int) -> String {
        "\(catalogPath).before-v\(version)"
    }

    /// Keeps the catalog as it is before a migration to `version` changes it. A copy already there
    /// is kept: it is from before the first attempt at this upgrade, which is what a rollback wants.
    public static func keepBeforeMigration(_ source: any DatabaseReader, catalogPath: String, version: Int) throws {
        let destination = beforeMigrationPath(catalogPath, version: version)
        if FileSystem.exists(destination) { return }
        do {
            try write(from: source, to: destination)
        } catch let error as PathError where error.errno == EEXIST {
            return  // another process made it between the check and the link: same moment, same copy
        }
    }

    /// Removes every pre-migration copy beside `catalogPath` (once a check found the migrated
    /// catalog sound, the copies have done their work); returns the paths removed.
    @discardableResult
    public static func removeBeforeMigrationCopies(of catalogPath: String) throws -> [String] {
        let folder = FileSystem.parentPath(catalogPath)
        let prefix = String(catalogPath.split(separator: "/").last ?? "") + ".before-v"
        let names = try FileSystem.contents(of: folder)
        var removed: [String] = []
        for name in names.sorted() where name.hasPrefix(prefix) && Int(name.dropFirst(prefix.count)) != nil {
            let path = FileSystem.join(folder, name)
            try FileSystem.remove(path)
            removed.append(path)
        }
        if !removed.isEmpty { try FileSystem.syncDirectory(folder) }
        return removed
    }
}
