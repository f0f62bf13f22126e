import BlobStore
import Synchronization
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
    private let fd: FileDescriptor

    /// Told the vault's path when a lock is held by another command and this one starts to wait for
    /// it, so that a user sees why the command does not go on (the CLI prints it).
    public static let waiting = Mutex<(@Sendable (String) -> Void)?>(nil)

    /// Blocks until the lock is granted.
    public init(vaultPath: String, mode: Mode) throws {
        let path = FileSystem.join(vaultPath, VaultLock.fileName)
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(path, O_RDWR | O_CREAT, mode: 0o600)
        } catch let error as PathError {
            throw PathError("opening the vault lock", path: path, errno: error.errno)
        }
        let operation = mode == .shared ? LOCK_SH : LOCK_EX
        do {
            if try !fd.tryLock(operation) {
                if let notice = Self.waiting.withLock({ $0 }) { notice(vaultPath) }
                try fd.lock(operation)
            }
        } catch {
            fd.close()
            throw error
        }
        self.fd = fd
    }

    deinit { fd.close() }
}
