#if canImport(Glibc)
import Glibc
#endif
import CFileOps

extension FileSystem {
    /// Makes everything written to the file system that holds `path` durable (syncfs(2)): one call
    /// instead of an fsync per file, for writers of many files such as an export.
    public static func syncFileSystem(containing path: String) throws {
        _ = try FileDescriptor.with(path, O_RDONLY) { fd in
            try sys("syncing the file system of", path) { cfileops_syncfs(fd.raw) }
        }
    }
}
