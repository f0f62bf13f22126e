import BlobStore
import GRDB
import ReceiptCatalog
import ReceiptVault
import ReceiptWire
#if canImport(Glibc)
import Glibc
#endif

/// Where a vault syncs: the server's URL and the account, with the account's token in
/// `PATH/remote.token` (mode 0600, readable by the owner only). URL and account live in the
/// catalog's settings.
public struct RemoteConfig: Sendable, Equatable {
    public var url: String
    public var account: String
    public var token: String

    public static let tokenFileName = "remote.token"
    static let urlKey = "remote.url"
    static let accountKey = "remote.account"

    public init(url: String, account: String, token: String) {
        self.url = url
        self.account = account
        self.token = token
    }

    public func client() -> SyncClient { SyncClient(baseURL: url, token: token) }

    /// The vault's remote, or nil when none was set.
    public static func load(_ vault: Vault) throws -> RemoteConfig? {
        let pair = try vault.catalog.read { db -> (String, String)? in
            let url = try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = ?", arguments: [urlKey])
            let account = try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = ?", arguments: [accountKey])
            guard let url, let account else { return nil }
            return (url, account)
        }
        guard let (url, account) = pair else { return nil }
        let path = FileSystem.join(vault.path, tokenFileName)
        var bytes = [UInt8](repeating: 0, count: 256)
        let count: Int
        do {
            count = try FileDescriptor.with(path, O_RDONLY) { fd in try bytes.withUnsafeMutableBytes { try fd.readFully(into: $0) } }
        } catch let error as IOError {
            throw SyncError("the remote's token cannot be read from \(path) (\(error.message)): run `receipt remote set` again")
        }
        let token = String(decoding: bytes[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return RemoteConfig(url: url, account: account, token: token)
    }

    /// Points the vault at a server. The token file is written with mode 0600 and renamed into
    /// place. When the server or the account changes, the vault's sync memory is reset: every
    /// receipt of its own zones is queued to be pushed, and zones shared by others are dropped at the
    /// next sync (they belonged to the former account).
    public static func set(_ vault: Vault, url: String, account: String, token: String) throws {
        guard url.hasPrefix("http://") || url.hasPrefix("https://"), url.count > 8 else {
            throw SyncError("invalid server URL \(url): it must start with http:// or https://")
        }
        guard WireName.isValid(account) else {
            throw SyncError("invalid account name \(account): use 1 to 64 letters, digits, '.', '_' or '-'")
        }
        guard WireName.isValidBlobAddress(token.lowercased()) else {
            throw SyncError("invalid token: a token is the 64 hexadecimal digits `receipt server account-add` printed")
        }
        let path = FileSystem.join(vault.path, tokenFileName)
        let staging = path + "." + SecureRandom.hex(4) + ".tmp"
        do {
            try FileDescriptor.with(staging, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600) { fd in
                _ = fchmod(fd.raw, 0o600)
                try fd.write(Array((token.lowercased() + "\n").utf8))
                try fd.sync()
            }
            try FileSystem.rename(staging, path)
            try FileSystem.syncDirectory(vault.path)
        } catch let error as IOError {
            try? FileSystem.remove(staging)
            throw SyncError("cannot write the token file \(path): \(error.message)")
        }
        var normalized = url
        while normalized.hasSuffix("/") { normalized.removeLast() }
        try vault.catalog.write { db in
            let oldURL = try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = ?", arguments: [urlKey])
            let oldAccount = try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = ?", arguments: [accountKey])
            for (key, value) in [(urlKey, normalized), (accountKey, account)] {
                try db.execute(sql: "INSERT OR REPLACE INTO settings(key, value) VALUES (?, ?)", arguments: [key, value])
            }
            if (oldURL != nil || oldAccount != nil) && (oldURL != normalized || oldAccount != account) {
                try db.execute(sql: "DELETE FROM syncState")
                try db.execute(sql: "UPDATE zones SET changeToken = NULL")
                try CatalogWriter(db).requeueOwnZones()
            }
        }
    }
}
