import BlobStore
#if canImport(Glibc)
import Glibc
#endif

/// What one poll sees of a file. Two polls that see the same signature, one interval apart, mean
/// nobody wrote to the file in between (ctime and inode are compared too: they change on any write
/// or replacement, even one that puts the old mtime back).
struct FileSignature: Equatable, Sendable {
    let size: Int64
    let mtimeNs: Int64
    let ctimeNs: Int64
    let device: UInt64
    let inode: UInt64

    init(_ st: stat) {
        size = Int64(st.st_size)
        mtimeNs = Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec)
        ctimeNs = Int64(st.st_ctim.tv_sec) * 1_000_000_000 + Int64(st.st_ctim.tv_nsec)
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
    }

    /// lstat(2) of a regular file; nil when it is absent or not a regular file.
    static func of(_ path: String) -> FileSignature? {
        var st = stat()
        guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        return FileSignature(st)
    }
}

/// One regular file found under the inbox.
struct InboxEntry: Sendable {
    let path: String
    let signature: FileSignature
}

/// Walks the inbox: regular files in it and its sub-folders, names starting with `.` skipped (so
/// `.imported/`, `.failed/` and the hidden temporary files of writers that rename into place).
/// Symbolic links, FIFOs and the like are left alone. Folders that cannot be listed are skipped:
/// the next poll tries them again.
enum InboxScan {
    static func files(under root: String, folders: inout [String]) -> [InboxEntry] {
        var out: [InboxEntry] = []
        walk(root, into: &out, folders: &folders)
        return out
    }

    private static func walk(_ folder: String, into out: inout [InboxEntry], folders: inout [String]) {
        folders.append(folder)
        guard let names = try? FileSystem.contents(of: folder) else { return }
        for name in names.sorted() where !name.hasPrefix(".") {
            let path = FileSystem.join(folder, name)
            var st = stat()
            guard lstat(path, &st) == 0 else { continue }
            switch st.st_mode & S_IFMT {
            case S_IFDIR: walk(path, into: &out, folders: &folders)
            case S_IFREG: out.append(InboxEntry(path: path, signature: FileSignature(st)))
            default: continue
            }
        }
    }
}
