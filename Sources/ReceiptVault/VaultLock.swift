import BlobStore
#if canImport(Glibc)
import Glibc
#endif

/// The vault's lock file, `PATH/lock`, held with flock(2). Every command that adds references to
/// blobs (import, attach, sync's pull) holds it shared from before it stages a blob until its rows
/// have committed; gc holds it exclusive while it decides what is garbage and deletes it. So gc never
/// sees a blob that is staged or installed but not yet referenced. flock is released by the kernel
/// when a process dies, so a killed gc or import never blocks the next one.
public final class VaultLock: @unchecked Sendable {
    public enum Mode: Sendable { case shared, exclusive }

    public static let fileName = "lock"
    private let fd: Int32

    /// Blocks until the lock is granted.
    public init(vaultPath: String, mode: Mode) throws {
        let path = FileSystem.join(vaultPath, VaultLock.fileName)
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        if fd < 0 { throw IOError("opening the vault lock", path: path, errno: errno) }
        while flock(fd, mode == .shared ? LOCK_SH : LOCK_EX) != 0 {
            if errno == EINTR { continue }
            let code = errno
            Glibc.close(fd)
            throw IOError("locking", path: path, errno: code)
        }
        self.fd = fd
    }

    deinit { Glibc.close(fd) }
}
