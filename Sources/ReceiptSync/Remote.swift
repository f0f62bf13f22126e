import Foundation
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
    public var trust: RemoteTrust
    /// Plain `http://` to a host that is not this machine was allowed (`remote set --insecure-http`).
    public var insecureHTTP: Bool

    public static let tokenFileName = "remote.token"
    static let urlKey = "remote.url"
    static let accountKey = "remote.account"
    static let trustKey = "remote.trust"
    static let trustPEMKey = "remote.trustPEM"
    static let insecureKey = "remote.insecureHTTP"

    public init(url: String, account: String, token: String, trust: RemoteTrust = .system, insecureHTTP: Bool = false) {
        self.url = url
        self.account = account
        self.token = token
        self.trust = trust
        self.insecureHTTP = insecureHTTP
    }

    public func client() throws -> SyncClient {
        try Self.checkScheme(url, insecureHTTP: insecureHTTP)
        return SyncClient(baseURL: url, token: token, tls: try trust.tlsConfiguration())
    }

    /// The URL's host and port (the scheme's default port when none is given).
    static func hostAndPort(_ url: String) throws -> (host: String, port: Int) {
        guard let parsed = URLComponents(string: url), let host = parsed.host, !host.isEmpty,
              parsed.scheme == "http" || parsed.scheme == "https" else {
            throw SyncError("invalid server URL \(url): it must be http://HOST[:PORT] or https://HOST[:PORT]")
        }
        return (host, parsed.port ?? (parsed.scheme == "https" ? 443 : 80))
    }

    /// Plain http:// only to this machine, unless allowed: a token and receipts would cross the
    /// network in clear.
    static func checkScheme(_ url: String, insecureHTTP: Bool) throws {
        let (host, _) = try hostAndPort(url)
        if url.hasPrefix("http://") && !insecureHTTP && !IPv4or6.isLoopback(host) {
            throw SyncError("refusing plain http:// to \(host): the token and the receipts would cross the network unencrypted. "
                + "Serve HTTPS (`receipt server run --tls-cert PEM --tls-key PEM`) and use https://, "
                + "or pass --insecure-http to `receipt remote set` to accept that")
        }
    }

    /// The vault's remote, or nil when none was set.
    public static func load(_ vault: Vault) throws -> RemoteConfig? {
        let settings = try vault.catalogRead { db in try Catalog.settings(db, prefixed: "remote.") }
        guard let url = settings[urlKey], let account = settings[accountKey] else { return nil }
        let trust: RemoteTrust
        switch (settings[trustKey], settings[trustPEMKey]) {
        case ("ca", let pem?): trust = .ca(pem: pem)
        case (let pinned?, let pem?) where pinned.hasPrefix("pin:"): trust = .pinned(sha256: String(pinned.dropFirst(4)), pem: pem)
        default: trust = .system
        }
        let path = FileSystem.join(vault.path, tokenFileName)
        var bytes = [UInt8](repeating: 0, count: 256)
        let count: Int
        do {
            count = try FileDescriptor.with(path, O_RDONLY) { fd in try bytes.withUnsafeMutableBytes { try fd.readFully(into: $0) } }
        } catch let error as PathError {
            throw SyncError("the remote's token cannot be read from \(path) (\(error.message)): run `receipt remote set` again")
        }
        let token = String(decoding: bytes[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return RemoteConfig(url: url, account: account, token: token, trust: trust, insecureHTTP: settings[insecureKey] == "1")
    }

    /// Points the vault at a server. The token file is written with mode 0600 and renamed into
    /// place. When the server or the account changes, the vault's sync memory is reset: every
    /// receipt of its own zones is queued to be pushed, and zones shared by others are dropped at the
    /// next sync (they belonged to the former account).
    public static func set(_ vault: Vault, url: String, account: String, token: String, caFile: String? = nil,
                           pin: String? = nil, insecureHTTP: Bool = false) async throws {
        guard url.hasPrefix("http://") || url.hasPrefix("https://"), url.count > 8 else {
            throw SyncError("invalid server URL \(url): it must start with http:// or https://")
        }
        try checkScheme(url, insecureHTTP: insecureHTTP)
        if caFile != nil && pin != nil { throw SyncError("give either --ca-file or --pin, not both") }
        if url.hasPrefix("http://") && (caFile != nil || pin != nil) {
            throw SyncError("--ca-file and --pin verify an https:// server; \(url) is plain http://")
        }
        var trust = RemoteTrust.system
        if let caFile { trust = .ca(pem: try RemoteTrust.readCAFile(caFile)) }
        if let pin {
            guard let hex = RemoteTrust.normalizedPin(pin) else {
                throw SyncError("invalid --pin \(pin): give the certificate's SHA-256 as `receipt server cert` printed it (64 hex digits)")
            }
            let (host, port) = try hostAndPort(url)
            trust = .pinned(sha256: hex, pem: try await RemoteTrust.fetchPinned(host: host, port: port, pin: hex))
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
        } catch let error as PathError {
            try? FileSystem.remove(staging)
            throw SyncError("cannot write the token file \(path): \(error.message)")
        }
        var normalized = url
        while normalized.hasSuffix("/") { normalized.removeLast() }
        try vault.catalogTransaction { w in
            let oldURL = try Catalog.setting(w.db, urlKey)
            let oldAccount = try Catalog.setting(w.db, accountKey)
            try w.setSetting(urlKey, normalized)
            try w.setSetting(accountKey, account)
            try w.removeSettings([trustKey, trustPEMKey, insecureKey])
            switch trust {
            case .system: break
            case .ca(let pem):
                try w.setSetting(trustKey, "ca")
                try w.setSetting(trustPEMKey, pem)
            case .pinned(let sha256, let pem):
                try w.setSetting(trustKey, "pin:" + sha256)
                try w.setSetting(trustPEMKey, pem)
            }
            if insecureHTTP { try w.setSetting(insecureKey, "1") }
            if (oldURL != nil || oldAccount != nil) && (oldURL != normalized || oldAccount != account) {
                try w.resetSync()
                try w.removeSettings([SyncEngine.textOfferedKey, SyncEngine.textAskedKey])
            }
        }
    }
}
