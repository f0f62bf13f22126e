import BlobStore
import CFileOps
import Foundation
import ReceiptCatalog
import ZIPFoundation
#if canImport(Glibc)
import Glibc
#endif

/// A folder an export writes into, held open: every name in it is created relative to its
/// descriptor (mkdirat, openat with `O_CREAT | O_EXCL | O_NOFOLLOW`), owner-only (folders 0700,
/// files 0600). Whatever another program puts at a name after the destination was checked (a
/// symbolic link to a file or a folder elsewhere, anything) is never followed nor written over: the
/// export fails instead. Renaming a folder away meanwhile does not redirect what is written into it.
public final class ExportFolder: @unchecked Sendable {
    let fd: FileDescriptor
    /// Where the folder was when it was opened, for messages.
    let path: String

    private init(_ fd: FileDescriptor, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { fd.close() }

    /// The folder at `path`, following the path as given (the user's own links included).
    public static func open(_ path: String) throws -> ExportFolder {
        ExportFolder(try FileDescriptor.open(path, O_RDONLY | O_DIRECTORY), path: path)
    }

    /// A new folder `name` in this one.
    public func makeFolder(_ name: String) throws -> ExportFolder {
        let path = FileSystem.join(self.path, name)
        return try refusingPlanted(path) {
            try FileSystem.makeDirectory(name, in: fd, mode: 0o700, path: path)
            return ExportFolder(try FileDescriptor.open(name, in: fd, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, path: path), path: path)
        }
    }

    /// A new file `name` in this one, open for writing (and reading with `readable`).
    public func makeFile(_ name: String, readable: Bool = false) throws -> FileDescriptor {
        let path = FileSystem.join(self.path, name)
        return try refusingPlanted(path) {
            try FileDescriptor.open(name, in: fd, (readable ? O_RDWR : O_WRONLY) | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600,
                                    path: path)
        }
    }

    func writeFile(_ name: String, _ data: Data) throws {
        let out = try makeFile(name)
        defer { out.close() }
        try data.withUnsafeBytes { try out.write($0) }
    }

    public func remove(_ name: String, isFolder: Bool = false) {
        try? FileSystem.remove(name, in: fd, isFolder: isFolder)
    }

    /// EEXIST (or ELOOP: a link where a folder is opened) at a name this export creates: something
    /// else put it there after the destination was checked.
    private func refusingPlanted<T>(_ path: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as PathError where error.errno == EEXIST || error.errno == ELOOP {
            throw VaultError(.io, "cannot export to \(path): something else created it while the export was written "
                + "(it was not followed nor written over; the export stopped)")
        }
    }
}

extension Vault {
    /// A zip with no entries (its end of central directory record alone): ZIPFoundation then opens the
    /// file this export created instead of creating one itself.
    static let emptyZip: [UInt8] = [0x50, 0x4B, 0x05, 0x06] + [UInt8](repeating: 0, count: 18)

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
            return try ExportFolder.open(parent).makeFolder(Self.lastComponent(destination))
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
            let made = try folder(parent == "." ? "" : parent).makeFolder(lastComponent(relative))
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
        let record = try blobRecord(sha256)
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
        let base = Self.lastComponent(destination)
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
        let failures = try Self.writeZip(receipts, items: items, purpose: purpose, into: zipFile, scratch: work,
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

    /// An export as a zip (the layout of `purpose`: `exportItems`, then `closingFiles`) written into
    /// `zipFile`, an empty file open for reading and writing; `export --zip` and the web view's
    /// download (`GET /z/OWNER/ZONE/download`) both write theirs here. `copy` puts an attachment's
    /// original bytes into a new scratch file made in `scratch`, throwing `BlobError` (or a
    /// not-found `VaultError`) for a blob that is missing or does not verify: that file is then left
    /// out and reported, and a corrupt blob never reaches the zip. One attachment at a time is held,
    /// on disk: memory does not grow with the export. `destination` names the zip in messages.
    public static func writeZip(_ receipts: [ReceiptView], items: [ExportItem], purpose: ExportPurpose, into zipFile: FileDescriptor,
                                scratch: ExportFolder, destination: String,
                                copy: (_ sha256: String, _ into: FileDescriptor) throws -> Void,
                                written: (ExportItem) -> Void = { _ in }) throws -> [ExportFailure] {
        try zipFile.write(emptyZip)
        var failures: [ExportFailure] = []
        let archive: Archive
        do {
            // ZIPFoundation opens files by path: this one opens the caller's file again, wherever its
            // folder may have gone since. Its own handle is released before this returns.
            archive = try Archive(url: URL(fileURLWithPath: "/proc/self/fd/\(zipFile.raw)"), accessMode: .update)
        } catch {
            throw VaultError(.io, "cannot create the zip file \(destination): \(error)")
        }
        for (index, item) in items.enumerated() {
            if let failure = try addVerifiedEntry(archive, item, scratch: scratch, name: String(index), destination: destination,
                                                  copy: copy) {
                failures.append(failure)
                continue
            }
            written(item)
        }
        for (name, data) in try closingFiles(receipts, items: items, failures: failures, purpose: purpose) {
            try addZipEntry(archive, name, size: Int64(data.count), mediaType: true, destination: destination) { position, size in
                let start = Int(position)
                return data.subdata(in: start..<min(start + size, data.count))
            }
        }
        return failures
    }

    /// One attachment into the zip: its verified bytes go to a scratch file first, so a corrupt blob
    /// never reaches the zip. Returns the failure of a blob that is missing or does not verify.
    private static func addVerifiedEntry(_ archive: Archive, _ item: ExportItem, scratch: ExportFolder, name: String,
                                         destination: String,
                                         copy: (String, FileDescriptor) throws -> Void) throws -> ExportFailure? {
        let scratchFile = try scratch.makeFile(name, readable: true)
        defer {
            scratchFile.close()
            scratch.remove(name)
        }
        do {
            try copy(item.sha256, scratchFile)
        } catch let error as BlobError {
            return ExportFailure(receipt: item.receipt, sha256: item.sha256, error: error.description)
        } catch let error as VaultError where error.kind == .notFound {
            return ExportFailure(receipt: item.receipt, sha256: item.sha256, error: error.message)
        }
        try addZipEntry(archive, item.name, size: item.size, mediaType: compressible(item.name),
                        destination: destination) { position, size in
            var data = Data(count: size)
            let n = try data.withUnsafeMutableBytes { try scratchFile.read(into: $0, at: position) }
            if n < size { data.removeLast(size - n) }
            return data
        }
        return nil
    }

    private static func addZipEntry(_ archive: Archive, _ name: String, size: Int64, mediaType compress: Bool, destination: String,
                             provider: (Int64, Int) throws -> Data) throws {
        do {
            // Owner-only once unzipped, as the export's own files.
            try archive.addEntry(with: name, type: .file, uncompressedSize: size, permissions: 0o600,
                                 compressionMethod: compress ? .deflate : .none, provider: provider)
        } catch let error as PathError {
            throw error
        } catch {
            throw VaultError(.io, "cannot write \(name) into the zip file \(destination): \(error)")
        }
    }
}
