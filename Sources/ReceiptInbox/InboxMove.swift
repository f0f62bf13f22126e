import BlobStore
import CFileOps
import Foundation
import ReceiptVault
#if canImport(Glibc)
import Glibc
#endif

/// Moving files out of the inbox, into `.imported/YYYY-MM/` or `.failed/`. Every move is one
/// rename(2) inside the inbox's file system, never over an existing name, followed by an fsync of
/// both folders so the move itself survives a power cut.
enum InboxMove {
    /// `.imported/YYYY-MM`: the month (local time) in which the file was imported.
    static func importedFolder(_ inbox: String, at date: Date = Date()) -> String {
        var seconds = time_t(date.timeIntervalSince1970)
        var parts = tm()
        localtime_r(&seconds, &parts)
        let month = String(format: "%04d-%02d", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1)
        return FileSystem.join(FileSystem.join(inbox, ".imported"), month)
    }

    static func failedFolder(_ inbox: String) -> String { FileSystem.join(inbox, ".failed") }

    /// `name`, then `stem-2.ext`, `stem-3.ext`, ...
    static func candidate(_ name: String, _ n: Int) -> String {
        guard n > 1 else { return name }
        if let dot = name.lastIndex(of: "."), dot != name.startIndex {
            return "\(name[..<dot])-\(n)\(name[dot...])"
        }
        return "\(name)-\(n)"
    }

    /// The folders a file may be moved into: `.imported` and `.failed` of the inbox.
    static let names = [".imported", ".failed"]

    /// Makes `folder` (inside `inbox`) and the folders between, refusing any that is a symbolic link
    /// or not a folder: files leave the inbox only into folders of the inbox itself.
    static func makeRealFolders(_ folder: String, inside inbox: String) throws {
        var path = inbox
        for name in folder.dropFirst(inbox.count).split(separator: "/") {
            path = FileSystem.join(path, String(name))
            if mkdir(path, 0o755) != 0 && errno != EEXIST { throw PathError("creating folder", path: path, errno: errno) }
            try requireRealFolder(path)
        }
    }

    /// Throws unless `path` is a folder itself (not a symbolic link to one); an absent one is fine.
    static func requireRealFolder(_ path: String) throws {
        guard let st = try FileSystem.status(path), !st.isDirectory else { return }
        throw VaultError(.badInput, "\(path) is " + (st.isSymlink ? "a symbolic link" : "not a folder")
            + ": files are moved only into folders of the watched folder itself")
    }

    /// Renames `path` into `folder` (inside `inbox`) under its own name, or the first suffixed name
    /// not taken; returns the new path. `before` runs with the chosen name just before the rename (to
    /// put the `.error` of a failed file beside it first: a kill in between leaves the file in the inbox).
    @discardableResult
    static func move(_ path: String, into folder: String, inside inbox: String,
                     before: ((String) throws -> Void)? = nil) throws -> String {
        try makeRealFolders(folder, inside: inbox)
        let name = path.split(separator: "/").last.map(String.init) ?? path
        var n = 1
        while true {
            let target = FileSystem.join(folder, candidate(name, n))
            n += 1
            if FileSystem.exists(target) { continue }
            try before?(target)
            if try renameNoReplace(path, target) {
                try FileSystem.syncDirectory(folder)
                try FileSystem.syncDirectory(FileSystem.parentPath(path))
                return target
            }
        }
    }

    /// Returns false when `to` exists (it is left alone).
    private static func renameNoReplace(_ from: String, _ to: String) throws -> Bool {
        if cfileops_rename_noreplace(from, to) == 0 { return true }
        switch errno {
        case EEXIST: return false
        case EINVAL, ENOSYS:
            // A file system without RENAME_NOREPLACE (some network ones): one watcher per inbox
            // (its lock) makes checking first and renaming enough.
            if FileSystem.exists(to) { return false }
            try FileSystem.rename(from, to)
            return true
        case let code: throw PathError("moving", path: from, errno: code)
        }
    }

    /// Writes `NAME.error` (one line) beside where the failed file is about to go: staged under a
    /// hidden name, synced, renamed into place.
    static func writeError(_ message: String, for target: String) throws {
        let folder = FileSystem.parentPath(target)
        let staging = FileSystem.join(folder, ".error-" + SecureRandom.hex(8))
        let line = message.replacingOccurrences(of: "\n", with: " ") + "\n"
        do {
            try FileDescriptor.with(staging, O_WRONLY | O_CREAT | O_EXCL) { fd in
                try fd.write(Array(line.utf8))
                try fd.sync()
            }
            try FileSystem.rename(staging, target + ".error")
        } catch {
            try? FileSystem.remove(staging)
            throw error
        }
    }
}
