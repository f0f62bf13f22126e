import BlobStore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A folder an export writes into, held open: every name in it is created relative to its
/// descriptor (mkdirat, openat with `O_CREAT | O_EXCL | O_NOFOLLOW`), owner-only (folders 0700,
/// files 0600). Whatever another program puts at a name after the destination was checked (a
/// symbolic link to a file or a folder elsewhere, anything) is never followed nor written over: the
/// export fails instead. Renaming a folder away meanwhile does not redirect what is written into it.
public final class ExportFolder: @unchecked Sendable {
    package let fd: FileDescriptor
    /// Where the folder was when it was opened, for messages.
    package let path: String

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

    package func writeFile(_ name: String, _ data: Data) throws {
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
            throw ExportError("cannot export to \(path): something else created it while the export was written "
                + "(it was not followed nor written over; the export stopped)")
        }
    }
}

/// An export that could not be written (the disk, the destination, a name planted meanwhile): one
/// sentence naming the file. The vault reports it as an I/O error, the server as a failed download.
public struct ExportError: Error, CustomStringConvertible, Sendable {
    public let description: String

    public init(_ description: String) { self.description = description }
}

/// A blob an export's `copy` could not find: its file is left out of the export and reported
/// (`ExportFailure`), the rest is still exported, as for a `BlobError`.
public struct MissingExportBlob: Error, CustomStringConvertible, Sendable {
    public let description: String

    public init(_ description: String) { self.description = description }
}
