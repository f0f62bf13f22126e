import BlobStore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The vault's lock file, `PATH/lock`, held with flock(2). Every command that adds references to
/// blobs (the ingest path, which takes it itself; a sync's pull, from before it decides which blobs
/// the vault holds) holds it shared from before it stages a blob until its rows have committed; gc
/// holds it exclusive while it decides what is garbage and deletes it, and `fsck --repair` while it
/// may replace the catalog. So gc never sees a blob that is staged or installed but not yet
/// referenced, and a writer that holds it knows the catalog is not swapped under it. flock is
/// released by the kernel when a process dies, so a killed gc or import never blocks the next one.
public final class VaultLock: @unchecked Sendable {
    public enum Mode: Sendable { case shared, exclusive }

    /// A lock file, by identity: two spellings of one vault's path are one lock.
    struct Key: Hashable, Sendable {
        let device: UInt64
        let inode: UInt64
    }

    /// The vault locks the running task (or thread) holds. flock(2) on a second descriptor of the
    /// same file waits for the first, so a caller inside a held lock (the ingest path inside a sync's
    /// pull, or inside `fsck --repair`) must not take it again: it finds it here.
    @TaskLocal static var held: [Key: Mode] = [:]

    public static let fileName = "lock"
    private let fd: FileDescriptor
    let key: Key
    let mode: Mode

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
            let st = try fd.stat()
            key = Key(device: st.device, inode: st.inode)
            if try !fd.tryLock(operation) {
                if let notice = Self.waiting.withLock({ $0 }) { notice(vaultPath) }
                try fd.lock(operation)
            }
        } catch {
            fd.close()
            throw error
        }
        self.fd = fd
        self.mode = mode
    }

    deinit { fd.close() }

    /// Runs `body` as the holder of this lock: the locks taken inside it find it held.
    public func scope<T>(_ body: () throws -> T) rethrows -> T {
        try Self.$held.withValue(Self.held.merging([key: mode]) { _, new in new }, operation: body)
    }

    public func scope<T>(isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T) async rethrows -> T {
        try await Self.$held.withValue(Self.held.merging([key: mode]) { _, new in new }, operation: body)
    }

    /// The lock of `vaultPath` when the running task holds it in `mode` or exclusively already; throws
    /// when it holds it shared and asks for it exclusive (flock would wait for itself).
    static func alreadyHeld(_ vaultPath: String, _ mode: Mode) throws -> Bool {
        guard !held.isEmpty, let st = try? FileSystem.status(FileSystem.join(vaultPath, fileName), followLinks: true),
              let holding = held[Key(device: st.device, inode: st.inode)] else { return false }
        if holding == .shared && mode == .exclusive {
            throw VaultError(.io, "the vault lock of \(vaultPath) is held shared by this command, which asked for it exclusive")
        }
        return true
    }

    /// Runs `body` holding the lock of `vaultPath` in `mode`: taken unless the running task holds it.
    static func holding<T>(_ vaultPath: String, _ mode: Mode, _ body: () throws -> T) throws -> T {
        if try alreadyHeld(vaultPath, mode) { return try body() }
        let lock = try VaultLock(vaultPath: vaultPath, mode: mode)
        return try withExtendedLifetime(lock) { try lock.scope(body) }
    }

    static func holding<T>(_ vaultPath: String, _ mode: Mode, isolation: isolated (any Actor)? = #isolation,
                           _ body: () async throws -> T) async throws -> T {
        if try alreadyHeld(vaultPath, mode) { return try await body() }
        let lock = try VaultLock(vaultPath: vaultPath, mode: mode)
        defer { withExtendedLifetime(lock) {} }
        return try await lock.scope(body)
    }
}
