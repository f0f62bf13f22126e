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
    private let fd: FileDescriptor

    private init(fd: FileDescriptor) { self.fd = fd }

    /// Waits (without blocking a thread) until the lock is granted.
    public static func acquire(vaultPath: String) async throws -> SyncLock {
        let path = FileSystem.join(vaultPath, fileName)
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(path, O_RDWR | O_CREAT, mode: 0o600)
        } catch let error as PathError {
            throw SyncError("cannot open the sync lock \(path): \(error.message)")
        }
        do {
            while try !fd.tryLock() { try await Task.sleep(nanoseconds: 50_000_000) }
        } catch let error as PathError {
            fd.close()
            throw SyncError("cannot lock \(path): \(error.message)")
        } catch {
            fd.close()
            throw error
        }
        return SyncLock(fd: fd)
    }

    public static func wipeRequested(vaultPath: String) -> Bool {
        FileSystem.exists(FileSystem.join(vaultPath, wipeMarker))
    }

    deinit { fd.close() }
}
