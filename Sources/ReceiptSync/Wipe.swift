import BlobStore
import ReceiptCatalog
import ReceiptVault
#if canImport(Glibc)
import Glibc
#endif

/// What `receipt wipe` removed.
public struct WipeReport: Codable, Sendable, Equatable {
    public var vault: String
    public var wiped: Bool
    /// The account's own zones deleted on the server (`--remote`), as `OWNER/NAME`.
    public var remoteZones: [String]
}

/// Deletes a vault's local data (and with `remote`, the account's own zones on the server).
///
/// Order (the seeds' wipe crash: never remove a store under a running sync):
/// 1. mark the vault `wipe.requested`, so a running sync stops at its next step;
/// 2. take the sync lock (waits for that sync to end) and then the vault lock exclusively (waits
///    for import, gc and the rest);
/// 3. with `remote`, delete the zones on the server; on failure nothing local is removed;
/// 4. rename the vault folder aside in one step (`.NAME.wiping-…`), then delete that folder. A
///    crash during the deletion leaves no half-vault at the path, only the aside folder, which the
///    next wipe of the same path finishes removing.
public enum Wipe {
    public static func run(vaultPath given: String, remote: Bool) async throws -> WipeReport {
        var vaultPath = given
        while vaultPath.count > 1 && vaultPath.hasSuffix("/") { vaultPath.removeLast() }
        guard vaultPath != "/" && vaultPath != "." && vaultPath != ".." && !vaultPath.hasSuffix("/..") && !vaultPath.hasSuffix("/.") else {
            throw SyncError("refusing to wipe \(given): give the vault's own folder")
        }
        // A vault reached through a symbolic link is wiped where it really is.
        if let st = try FileSystem.status(vaultPath), st.isSymlink, let real = try? FileSystem.realPath(vaultPath) {
            vaultPath = real
        }
        let catalogPath = FileSystem.join(vaultPath, Catalog.fileName)
        let parent = FileSystem.parentPath(vaultPath)
        let base = vaultPath.split(separator: "/").last.map(String.init) ?? "vault"
        let asidePrefix = "." + base + ".wiping-"
        // Finish wipes a crash interrupted.
        for name in try FileSystem.contents(of: parent) where name.hasPrefix(asidePrefix) {
            try removeTree(FileSystem.join(parent, name))
        }
        guard FileSystem.exists(catalogPath) else {
            throw SyncError("no vault at \(vaultPath): nothing to wipe")
        }
        let marker = FileSystem.join(vaultPath, SyncLock.wipeMarker)
        let fd = Glibc.open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        if fd >= 0 { Glibc.close(fd) }
        var removedZones: [String] = []
        do {
            let syncLock = try await SyncLock.acquire(vaultPath: vaultPath)
            defer { withExtendedLifetime(syncLock) {} }
            if remote {
                let vault = try Vault.open(at: vaultPath)
                defer { try? vault.close() }
                guard let config = try RemoteConfig.load(vault) else {
                    throw SyncError("this vault has no remote set: `wipe --remote` has nothing to delete on a server")
                }
                let client = try config.client()
                for zone in try await client.zones() where zone.owner == config.account {
                    try await client.deleteZone(owner: zone.owner, name: zone.name)
                    removedZones.append("\(zone.owner)/\(zone.name)")
                }
            }
            let vaultLock = try VaultLock(vaultPath: vaultPath, mode: .exclusive)
            defer { withExtendedLifetime(vaultLock) {} }
            let aside = FileSystem.join(parent, asidePrefix + SecureRandom.hex(6))
            try FileSystem.rename(vaultPath, aside)
            try FileSystem.syncDirectory(parent)
            try removeTree(aside)
            try FileSystem.syncDirectory(parent)
        } catch {
            try? FileSystem.remove(marker)
            throw error
        }
        return WipeReport(vault: vaultPath, wiped: true, remoteZones: removedZones)
    }

    /// Deletes a folder and everything in it, never following symbolic links.
    static func removeTree(_ path: String) throws {
        guard let st = try FileSystem.status(path) else { return }
        if st.isDirectory {
            for name in try FileSystem.contents(of: path) { try removeTree(FileSystem.join(path, name)) }
            if rmdir(path) != 0 && errno != ENOENT { throw PathError("removing folder", path: path, errno: errno) }
        } else {
            try FileSystem.remove(path)
        }
    }
}
