import BlobStore
import CFileOps
import Foundation
import ReceiptCatalog
import ReceiptExportLayout
#if canImport(Glibc)
import Glibc
#endif

extension Vault {
    /// The destination must be a new or empty folder, or (zip) a file that does not exist yet in an
    /// existing folder. Checked before anything is written; returns the empty folder found (by device
    /// and inode, so that it is the one written into), nil when it is to be created.
    func checkDestination(_ destination: String, zip: Bool) throws -> FileStatus? {
        // Not inside the vault, where the files would be strangers to fsck and gc.
        var existing = destination
        while Self.realPath(existing) == nil && existing != "/" && existing != "." { existing = FileSystem.parentPath(existing) }
        if let real = Self.realPath(existing), let vaultReal = Self.realPath(path), real == vaultReal || real.hasPrefix(vaultReal + "/") {
            throw VaultError.bad("cannot export to \(destination): it is inside the vault \(path)")
        }
        let st = try wrapped { try FileSystem.status(destination, followLinks: true) }
        if zip {
            guard destination.lowercased().hasSuffix(".zip") else {
                throw VaultError.bad("cannot export to \(destination): with --zip, give the name of a .zip file to create")
            }
            if st != nil || (try? FileSystem.status(destination)) ?? nil != nil {
                throw VaultError.bad("cannot export to \(destination): the file already exists (nothing was written)")
            }
            let parent = FileSystem.parentPath(destination)
            guard let pst = try? FileSystem.status(parent, followLinks: true), pst.isDirectory else {
                throw VaultError.bad("cannot export to \(destination): no folder \(parent)")
            }
            return nil
        }
        guard let st else {
            if (try? FileSystem.status(destination)) ?? nil != nil {
                throw VaultError.bad("cannot export to \(destination): it is a dangling symbolic link")
            }
            return nil
        }
        guard st.isDirectory else {
            throw VaultError.bad("cannot export to \(destination): it exists and is not a folder")
        }
        let contents = try wrapped { try FileSystem.contents(of: destination) }
        if !contents.isEmpty {
            throw VaultError.bad("cannot export to \(destination): the folder is not empty (nothing was written)")
        }
        return st
    }

    /// The destination folder, opened once: created here (0700, its missing parents too), or the
    /// empty folder `checked` found, still that folder and still empty.
    func openExportFolder(_ destination: String, checked: FileStatus?) throws -> ExportFolder {
        guard let checked else {
            let parent = FileSystem.parentPath(destination)
            try FileSystem.makeDirectories(parent, mode: 0o700)
            return try ExportFolder.open(parent).makeFolder(FileSystem.lastComponent(destination))
        }
        let folder = try ExportFolder.open(destination)
        let st = try folder.fd.stat()
        guard st.device == checked.device, st.inode == checked.inode, try FileSystem.contents(of: folder.fd).isEmpty else {
            throw VaultError(.io, "cannot export to \(destination): the folder changed after it was checked (nothing was written)")
        }
        return folder
    }

    /// The folders of `names` (relative paths), each made once in the folder above it.
    static func makeFolders(for names: [String], in root: ExportFolder) throws -> [String: ExportFolder] {
        var folders = ["": root]
        func folder(_ relative: String) throws -> ExportFolder {
            if let made = folders[relative] { return made }
            let parent = FileSystem.parentPath(relative)
            let made = try folder(parent == "." ? "" : parent).makeFolder(FileSystem.lastComponent(relative))
            folders[relative] = made
            return made
        }
        for name in names {
            let parent = FileSystem.parentPath(name)
            _ = try folder(parent == "." ? "" : parent)
        }
        return folders
    }

    /// A blob's original, verified bytes into `out`, which the caller removes (where it created it)
    /// if this throws.
    func copyExported(_ sha256: String, into out: FileDescriptor) throws {
        let record: BlobRecord
        do {
            record = try blobRecord(sha256)
        } catch let error as VaultError where error.kind == .notFound {
            throw MissingExportBlob(error.message)
        }
        if record.inline != nil {
            try readBlob(record) { try out.write($0) }
        } else {
            try blobs.copy(record.sha256, encoding: record.encoding, into: out, removeOnFailure: false)
        }
    }

    /// flushes every file and folder written under `folder` (one syncfs).
    static func syncFileSystem(of folder: ExportFolder) throws {
        if cfileops_syncfs(folder.fd.raw) != 0 { throw PathError("syncing the file system of", path: folder.path, errno: errno) }
    }

    // MARK: - Zip

    /// Writes the zip in a private folder of its own (0700: no other user can put a name in it) beside
    /// the destination, and gives the finished file its name with link(2), which neither replaces nor
    /// follows what may be there by then.
    func exportZip(_ destination: String, receipts: [ReceiptView], items: [ExportItem], purpose: ExportPurpose,
                   tally: inout ExportProgress, progress: (@Sendable (ExportProgress) -> Void)?) throws -> [ExportFailure] {
        let parent = try ExportFolder.open(FileSystem.parentPath(destination))
        let base = FileSystem.lastComponent(destination)
        let workName = ".\(base).\(SecureRandom.hex(6)).partial"
        let work = try parent.makeFolder(workName)
        let zipName = "export.zip"
        defer {
            work.remove(zipName)
            parent.remove(workName, isFolder: true)
        }
        let zipFile = try work.makeFile(zipName, readable: true)
        defer { zipFile.close() }
        var counted = tally
        let failures = try ExportLayout.writeZip(receipts, items: items, purpose: purpose, into: zipFile, scratch: work,
                                         destination: destination, copy: copyExported) { item in
            counted.filesDone += 1
            counted.bytesDone += item.size
            progress?(counted)
        }
        tally = counted
        try zipFile.sync()
        do {
            try FileSystem.link(zipName, in: work.fd, as: base, in: parent.fd, path: destination)
        } catch let error as PathError where error.errno == EEXIST {
            throw VaultError.bad("cannot export to \(destination): the file already exists (nothing was written)")
        }
        try parent.fd.sync()
        return failures
    }
}
