import BlobStore
#if canImport(Glibc)
import Glibc
#endif

/// Which files of the inbox some process holds open for writing, from /proc: each process's open
/// descriptors (readlink of /proc/PID/fd/N) that name a file under the inbox, that file's identity
/// (stat through the link: device and inode) and the descriptor's access mode (the `flags:` line of
/// /proc/PID/fdinfo/N, O_WRONLY or O_RDWR). A writer pausing with the file open (a scanner between
/// pages, `(head; sleep; tail) > FILE`) is seen however long it pauses.
///
/// Processes of other users are not readable to a user other than root: their writers are known by
/// the settle time alone, as on a system without /proc. Not an F_SETLEASE read lease: it needs the
/// file's owner (or CAP_LEASE), and a writer opening the file while the lease is held sends its
/// holder SIGIO, whose default action ends the process.
enum OpenWriters {
    /// The paths among `entries` some process holds open for writing. `root` is the inbox's real
    /// path (symbolic links resolved, as the kernel names open files).
    static func held(_ entries: [InboxEntry], under root: String) -> Set<String> {
        guard !entries.isEmpty else { return [] }
        var byIdentity: [Identity: String] = [:]
        for entry in entries { byIdentity[Identity(entry.signature.device, entry.signature.inode)] = entry.path }
        let prefix = root.hasSuffix("/") ? root : root + "/"
        var held: Set<String> = []
        for pid in (try? FileSystem.contents(of: "/proc")) ?? [] where pid.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) {
            let fds = "/proc/" + pid + "/fd"
            // Unreadable (another user's process) or gone since listed: nothing to learn from it.
            for fd in (try? FileSystem.contents(of: fds)) ?? [] {
                let link = fds + "/" + fd
                guard let target = readLink(link), target.hasPrefix(prefix) else { continue }
                var st = stat()
                guard stat(link, &st) == 0, let path = byIdentity[Identity(UInt64(st.st_dev), UInt64(st.st_ino))],
                      opensForWriting("/proc/" + pid + "/fdinfo/" + fd) else { continue }
                held.insert(path)
            }
        }
        return held
    }

    private struct Identity: Hashable {
        let device: UInt64
        let inode: UInt64
        init(_ device: UInt64, _ inode: UInt64) {
            self.device = device
            self.inode = inode
        }
    }

    private static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink(path, &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether the descriptor's `flags:` (octal) give write access; false when it cannot be read.
    private static func opensForWriting(_ fdinfo: String) -> Bool {
        guard let text = try? FileDescriptor.with(fdinfo, O_RDONLY, { fd -> String in
            var bytes = [UInt8](repeating: 0, count: 4096)
            let n = try bytes.withUnsafeMutableBytes { try fd.read(into: $0) }
            return String(decoding: bytes[..<n], as: UTF8.self)
        }) else { return false }
        for line in text.split(separator: "\n") where line.hasPrefix("flags:") {
            guard let flags = Int(String(line.dropFirst("flags:".count).drop { $0 == " " || $0 == "\t" }), radix: 8) else {
                return false
            }
            let access = Int32(flags) & O_ACCMODE
            return access == O_WRONLY || access == O_RDWR
        }
        return false
    }
}
