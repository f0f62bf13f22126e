import BlobStore
#if canImport(Glibc)
import Glibc
#endif

/// `PATH/sync.lock`, held exclusively (flock) by a running sync and by wipe, so at most one of them
/// works on a vault at a time; the kernel drops it when the process dies, so a killed sync never
/// blocks the next one. `PATH/wipe.requested` asks a running sync to stop at its next step.
public final class SyncLock: @unchecked Sendable {
    public static let fileName = "sync.lock"
    public static let wipeMarker = "wipe.requested"
    private let fd: Int32

    private init(fd: Int32) { self.fd = fd }

    /// Waits (without blocking a thread) until the lock is granted.
    public static func acquire(vaultPath: String) async throws -> SyncLock {
        let path = FileSystem.join(vaultPath, fileName)
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if fd < 0 { throw SyncError("cannot open the sync lock \(path): \(String(cString: strerror(errno)))") }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            guard code == EWOULDBLOCK || code == EINTR else {
                Glibc.close(fd)
                throw SyncError("cannot lock \(path): \(String(cString: strerror(code)))")
            }
            do {
                try await Task.sleep(nanoseconds: 50_000_000)
            } catch {
                Glibc.close(fd)
                throw error
            }
        }
        return SyncLock(fd: fd)
    }

    public static func wipeRequested(vaultPath: String) -> Bool {
        FileSystem.exists(FileSystem.join(vaultPath, wipeMarker))
    }

    deinit { Glibc.close(fd) }
}
