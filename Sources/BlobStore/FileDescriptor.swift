#if canImport(Glibc)
import Glibc
#endif
import CFileOps

/// An open file descriptor with the path it was opened from (for error messages). Closed by
/// `closeAfter` or explicitly; never leaked on a throw when used through `FileDescriptor.with`.
public struct FileDescriptor: Sendable {
    public let raw: Int32
    public let path: String

    public static func open(_ path: String, _ flags: Int32, mode: mode_t = 0o644) throws -> FileDescriptor {
        let fd = try sys("opening", path) { Glibc.open(path, flags | O_CLOEXEC, mode) }
        return FileDescriptor(raw: fd, path: path)
    }

    /// Opens, runs `body`, and closes whatever `body` did.
    public static func with<R>(_ path: String, _ flags: Int32, mode: mode_t = 0o644,
                               _ body: (FileDescriptor) throws -> R) throws -> R {
        let fd = try open(path, flags, mode: mode)
        defer { fd.close() }
        return try body(fd)
    }

    /// openat(2): `name` inside the folder `folder` holds open, whatever has become of the folder's
    /// path since; `path` names it in messages. With `O_CREAT | O_EXCL | O_NOFOLLOW` nothing that is
    /// there already (a symbolic link included) is opened or followed.
    public static func open(_ name: String, in folder: FileDescriptor, _ flags: Int32, mode: mode_t = 0o600,
                            path: String) throws -> FileDescriptor {
        let fd = try sys("opening", path) { Glibc.openat(folder.raw, name, flags | O_CLOEXEC, mode) }
        return FileDescriptor(raw: fd, path: path)
    }

    public func close() { _ = Glibc.close(raw) }

    /// Reads up to `buffer.count` bytes; 0 means end of file.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try sys("reading", path) { Glibc.read(raw, buffer.baseAddress, buffer.count) }
    }

    /// Fills `buffer` as far as the file allows; returns the count read (short only at EOF).
    public func readFully(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        var filled = 0
        while filled < buffer.count {
            let n = try read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]))
            if n == 0 { break }
            filled += n
        }
        return filled
    }

    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[done...])
            let n = try sys("writing", path) { Glibc.write(raw, rest.baseAddress, rest.count) }
            done += n
        }
    }

    public func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try write($0) }
    }

    /// Takes an flock (`LOCK_EX` or `LOCK_SH`), waiting for it.
    public func lock(_ operation: Int32 = LOCK_EX) throws {
        try sys("locking", path) { flock(raw, operation) }
    }

    /// Takes an flock if no other holder has one: true when taken, false when another holds it.
    /// (A file system without flock says ENOLCK or EOPNOTSUPP: thrown, for the caller to judge.)
    public func tryLock(_ operation: Int32 = LOCK_EX) throws -> Bool {
        do {
            try sys("locking", path) { flock(raw, operation | LOCK_NB) }
            return true
        } catch let error as PathError where error.errno == EWOULDBLOCK {
            return false
        }
    }

    public func unlock() {
        _ = flock(raw, LOCK_UN)
    }

    /// pread(2): fills `buffer` from `offset` as far as the file allows; returns the count read
    /// (short only at end of file).
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        var done = 0
        while done < buffer.count {
            let n = try sys("reading", path) { pread(raw, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done)) }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// pwrite(2): writes all of `bytes` at `offset`.
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        var done = 0
        while done < bytes.count {
            done += try sys("writing", path) { pwrite(raw, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done)) }
        }
    }

    public func sync() throws {
        try sys("syncing", path) { cfileops_fsync(raw) }
    }

    public func stat() throws -> FileStatus {
        var st = Glibc.stat()
        try sys("examining", path) { fstat(raw, &st) }
        return FileStatus(st)
    }

    public func seek(to offset: Int64) throws {
        try sys("seeking in", path) { lseek(raw, off_t(offset), SEEK_SET) }
    }
}

/// The parts of stat(2) the store needs.
public struct FileStatus: Sendable, Equatable {
    public let size: Int64
    public let mode: mode_t
    public let inode: UInt64
    public let device: UInt64
    public let mtimeNanoseconds: Int64

    /// A status kept elsewhere (a manifest import's plan file), for the stat cache.
    public init(size: Int64, mode: mode_t, inode: UInt64, device: UInt64, mtimeNanoseconds: Int64) {
        self.size = size
        self.mode = mode
        self.inode = inode
        self.device = device
        self.mtimeNanoseconds = mtimeNanoseconds
    }

    init(_ st: Glibc.stat) {
        self.init(size: Int64(st.st_size), mode: st.st_mode, inode: UInt64(st.st_ino), device: UInt64(st.st_dev),
                  mtimeNanoseconds: Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec))
    }

    public var isRegular: Bool { (mode & S_IFMT) == S_IFREG }
    public var isDirectory: Bool { (mode & S_IFMT) == S_IFDIR }
    public var isSymlink: Bool { (mode & S_IFMT) == S_IFLNK }
}

public enum FileSystem {
    /// lstat(2): the status of the path itself, not what a link points to. nil when absent.
    public static func status(_ path: String, followLinks: Bool = false) throws -> FileStatus? {
        var st = Glibc.stat()
        let r = fstatat(AT_FDCWD, path, &st, followLinks ? 0 : AT_SYMLINK_NOFOLLOW)
        if r == 0 { return FileStatus(st) }
        let code = errno
        if code == ENOENT || code == ENOTDIR { return nil }
        throw PathError("examining", path: path, errno: code)
    }

    public static func exists(_ path: String) -> Bool {
        (try? status(path)) != nil
    }

    /// Creates the folder and its parents; an existing folder is fine.
    public static func makeDirectories(_ path: String, mode: mode_t = 0o755) throws {
        if let st = try status(path, followLinks: true) {
            if st.isDirectory { return }
            throw PathError("creating folder", path: path, errno: EEXIST)
        }
        let parent = parentPath(path)
        if parent != path && !parent.isEmpty { try makeDirectories(parent, mode: mode) }
        if mkdir(path, mode) != 0 && errno != EEXIST {
            throw PathError("creating folder", path: path, errno: errno)
        }
    }

    /// mkdirat(2): a new folder `name` inside the folder `folder` holds open; EEXIST when the name is
    /// taken (by anything, a symbolic link too), never an existing folder used instead.
    public static func makeDirectory(_ name: String, in folder: FileDescriptor, mode: mode_t, path: String) throws {
        try sys("creating folder", path) { mkdirat(folder.raw, name, mode) }
    }

    /// unlinkat(2): removes `name` (a file, or with `isFolder` an empty folder) from the folder held
    /// open; a name already gone is not an error.
    public static func remove(_ name: String, in folder: FileDescriptor, isFolder: Bool = false) throws {
        if unlinkat(folder.raw, name, isFolder ? AT_REMOVEDIR : 0) != 0 && errno != ENOENT {
            throw PathError("removing", path: folder.path + "/" + name, errno: errno)
        }
    }

    /// linkat(2) between folders held open: `name` in `from` gets the second name `newName` in `to`;
    /// EEXIST rather than replace (or follow) what `newName` is.
    public static func link(_ name: String, in from: FileDescriptor, as newName: String, in to: FileDescriptor,
                            path: String) throws {
        try sys("linking as", path) { linkat(from.raw, name, to.raw, newName, 0) }
    }

    /// Names in a folder held open, without "." and "..".
    public static func contents(of folder: FileDescriptor) throws -> [String] {
        let copy = dup(folder.raw)
        guard copy >= 0, let dir = fdopendir(copy) else {
            let code = errno
            if copy >= 0 { _ = Glibc.close(copy) }
            throw PathError("listing", path: folder.path, errno: code)
        }
        defer { closedir(dir) }
        rewinddir(dir)
        return names(readFrom: dir)
    }

    /// The names an open directory stream lists, without "." and "..".
    private static func names(readFrom dir: OpaquePointer) -> [String] {
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// fsync(2) on a folder, so a rename or unlink inside it survives a power cut.
    public static func syncDirectory(_ path: String) throws {
        try FileDescriptor.with(path, O_RDONLY | O_DIRECTORY) { try $0.sync() }
    }

    /// Removes a file; a file already gone is not an error.
    public static func remove(_ path: String) throws {
        if unlink(path) != 0 && errno != ENOENT {
            throw PathError("removing", path: path, errno: errno)
        }
    }

    public static func rename(_ from: String, _ to: String) throws {
        try sys("renaming", from) { Glibc.rename(from, to) }
    }

    /// link(2): a second name for a file; fails with EEXIST rather than replace what is there.
    public static func link(_ from: String, _ to: String) throws {
        try sys("linking \(from) as", to) { Glibc.link(from, to) }
    }

    /// realpath(3): the absolute path with every symbolic link, `.` and `..` resolved.
    public static func realPath(_ path: String) throws -> String {
        guard let resolved = Glibc.realpath(path, nil) else { throw PathError("resolving", path: path, errno: errno) }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Sets a file's modification time to now.
    public static func touch(_ path: String) throws {
        try sys("touching", path) { utimensat(AT_FDCWD, path, nil, 0) }
    }

    /// Names in a folder, without "." and ".."; an absent folder has none.
    public static func contents(of path: String) throws -> [String] {
        guard let dir = opendir(path) else {
            if errno == ENOENT || errno == ENOTDIR { return [] }
            throw PathError("listing", path: path, errno: errno)
        }
        defer { closedir(dir) }
        return names(readFrom: dir)
    }

    public static func parentPath(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        if slash == path.startIndex { return "/" }
        return String(path[..<slash])
    }

    /// The last non-empty component, split on bytes (an export's and a manifest's names).
    public static func lastComponent(_ path: String) -> String {
        let bytes = path.utf8
        guard let last = bytes.lastIndex(where: { $0 != UInt8(ascii: "/") }) else { return path }
        let start = bytes[..<last].lastIndex(of: UInt8(ascii: "/")).map(bytes.index(after:)) ?? bytes.startIndex
        return String(path[start..<bytes.index(after: last)])
    }

    public static func join(_ a: String, _ b: String) -> String {
        a.hasSuffix("/") ? a + b : a + "/" + b
    }
}
