import BlobStore
import Foundation
import GRDB
import ReceiptCatalog

/// One local store: the catalog (SQLite) and the blob tree, in one folder. The vault owns the
/// invariants that tie them (docs/DESIGN.md):
/// - a blob is durable under its address before any row refers to it;
/// - removing a receipt never deletes bytes (only gc does, later);
/// - every mutation is one catalog transaction, and writes its outbox entry in it.
public final class Vault: Sendable {
    public let path: String
    /// Reached from other modules only through `catalogRead` and `catalogTransaction`, with the
    /// verbs of `Catalog` (ReceiptCatalog holds every statement on the vault's tables).
    let catalog: Catalog
    /// The blob tree; other modules reach it through the ingest path and `Vault+Transfer.swift`.
    let blobs: BlobStore
    public let settings: VaultSettings

    public var catalogPath: String { FileSystem.join(path, Catalog.fileName) }

    /// The catalog file this vault opened, to notice it being replaced by `fsck --repair`.
    private let catalogFile: (device: UInt64, inode: UInt64)?

    private init(path: String, catalog: Catalog, settings: VaultSettings) {
        self.path = path
        self.catalog = catalog
        self.blobs = BlobStore(root: path)
        self.settings = settings
        let st = try? FileSystem.status(FileSystem.join(path, Catalog.fileName), followLinks: true)
        catalogFile = st.flatMap { $0 }.map { ($0.device, $0.inode) }
    }

    /// Throws when the catalog file is no longer the one this vault opened.
    func requireSameCatalog() throws {
        let st = try FileSystem.status(catalogPath, followLinks: true)
        guard let opened = catalogFile, let st, st.device == opened.device, st.inode == opened.inode else {
            throw VaultError(.unusableVault, "the catalog \(catalogPath) was replaced while this command ran "
                + "(by receipt fsck --repair): nothing was changed; run the command again")
        }
    }

    /// Opens an existing vault. An absent, unreadable or newer catalog is refused with an error
    /// naming `receipt fsck --repair` (or upgrading) and no file is changed.
    public static func open(at path: String, access: Catalog.Access = .readWrite,
                            upgrading: (_ from: Int, _ to: Int) -> Void = { _, _ in }) throws -> Vault {
        do {
            let catalog = try Catalog.open(at: FileSystem.join(path, Catalog.fileName), access: access, upgrading: upgrading)
            let settings = try catalog.read { try VaultSettings.load($0) }
            return Vault(path: path, catalog: catalog, settings: settings)
        } catch let error as CatalogError where error.code == .absent && hasBlobFiles(path) {
            throw lostCatalog(path)
        } catch {
            throw VaultError.wrap(error)
        }
    }

    /// True when `PATH/blobs/` holds anything: a vault whose catalog is gone, not an empty folder.
    static func hasBlobFiles(_ path: String) -> Bool {
        !((try? FileSystem.contents(of: BlobStore(root: path).blobsPath)) ?? []).isEmpty
    }

    /// A vault with blobs but no catalog: only `fsck --repair` may give it a catalog again (a fresh
    /// one from `init` would describe none of its blobs).
    static func lostCatalog(_ path: String) -> VaultError {
        VaultError(.unusableVault, "the vault at \(path) holds blobs but has no catalog: run `receipt fsck --repair` "
            + "to rebuild it from the blobs; nothing was changed")
    }

    /// Creates a vault at `path`. On an existing vault changes nothing and returns `created == false`.
    public static func create(at path: String, inlineThreshold: Int64 = VaultSettings.defaultInlineThreshold,
                              compression: CompressionMode = .auto) throws -> (vault: Vault, created: Bool) {
        let catalogPath = FileSystem.join(path, Catalog.fileName)
        if FileSystem.exists(catalogPath) { return (try open(at: path), false) }
        if hasBlobFiles(path) { throw lostCatalog(path) }
        guard inlineThreshold >= 0 else { throw VaultError.bad("invalid inline threshold \(inlineThreshold): must be 0 or more bytes") }
        do {
            if let st = try FileSystem.status(path, followLinks: true), !st.isDirectory {
                throw VaultError.bad("cannot create a vault at \(path): it is a file, not a folder")
            }
            // Private by default: the vault folder is the owner's alone (an existing empty one too).
            try FileSystem.makeDirectories(path, mode: 0o700)
            _ = chmod(path, 0o700)
            let store = BlobStore(root: path)
            try store.prepare()
            let settings = VaultSettings(vaultID: UUID().uuidString.lowercased(),
                                         inlineThreshold: inlineThreshold, compression: compression)
            // Build the catalog under a staging name and rename it in, so a crash mid-init leaves
            // either no vault or a complete one.
            let staging = FileSystem.join(store.interimPath, "catalog-" + SecureRandom.hex(8) + ".interim")
            let catalog = try Catalog.create(at: staging, settings: settings)
            try catalog.close()
            for suffix in ["-wal", "-shm"] { try FileSystem.remove(staging + suffix) }
            try FileDescriptor.with(staging, O_RDONLY) { try $0.sync() }
            try FileSystem.rename(staging, catalogPath)
            try FileSystem.syncDirectory(path)
            return (try open(at: path), true)
        } catch {
            throw VaultError.wrap(error)
        }
    }

    /// Runs `body` holding the vault lock (see `VaultLock`; not taken again when the running task
    /// holds it), on the catalog this vault opened.
    public func locked<T>(_ mode: VaultLock.Mode, _ body: () throws -> T) throws -> T {
        try VaultLock.holding(path, mode) {
            try requireSameCatalog()
            return try body()
        }
    }

    /// `locked` for asynchronous work (a sync's pull).
    public func whileLocked<T>(_ mode: VaultLock.Mode, isolation: isolated (any Actor)? = #isolation,
                               _ body: () async throws -> T) async throws -> T {
        try await VaultLock.holding(path, mode) {
            try requireSameCatalog()
            return try await body()
        }
    }

    public func close() throws { try catalog.close() }
}
