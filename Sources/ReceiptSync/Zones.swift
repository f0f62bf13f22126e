import BlobStore
import ReceiptCatalog
import ReceiptVault
import ReceiptWire

/// One line of `receipt zone list`.
public struct ZoneListing: Codable, Sendable, Equatable {
    public var zone: String
    /// The owning account; for this vault's own zones, the remote account (null when no remote is set).
    public var owner: String?
    public var role: String
    public var shared: Bool

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(zone, forKey: .zone)
        try c.encode(owner, forKey: .owner)
        try c.encode(role, forKey: .role)
        try c.encode(shared, forKey: .shared)
    }
}

/// Zones and sharing, as the CLI uses them.
public enum Zones {
    /// Creates the local zone `name` (on the server at the next sync, or at `share`).
    public static func create(_ vault: Vault, name: String) throws {
        guard WireName.isValid(name) else {
            throw SyncError("invalid zone name '\(name)': use 1 to 64 letters, digits, '.', '_' or '-' (not starting with '.' or '-')")
        }
        try vault.catalogTransaction { w in
            if try Catalog.zone(w.db, name) != nil { throw SyncError("zone '\(name)' already exists: nothing was changed") }
            try w.insertZone(Zone(name: name, createdAt: w.now))
        }
    }

    public static func list(_ vault: Vault) throws -> [ZoneListing] {
        let me = try RemoteConfig.load(vault)?.account
        return try vault.catalogRead { db in
            try Catalog.zones(db).map { z in
                ZoneListing(zone: z.name, owner: z.owner ?? me, role: z.role.rawValue, shared: z.shared)
            }
        }
    }

    static func requireOwnZone(_ vault: Vault, _ zone: String) throws -> RemoteConfig {
        guard let remote = try RemoteConfig.load(vault) else {
            throw SyncError("this vault has no remote: run `receipt remote set URL --account NAME --token TOKEN` first")
        }
        guard let z = try vault.catalogRead({ try Catalog.zone($0, zone) }) else {
            throw SyncError("no zone '\(zone)' in this vault (see `receipt zone list`)")
        }
        if let owner = z.owner {
            throw SyncError("zone '\(zone)' belongs to \(owner): only its owner can change who shares it")
        }
        return remote
    }

    /// Shares one of this account's zones with `account` as `read` or `write` (creating the zone on
    /// the server first if no sync has yet).
    public static func share(_ vault: Vault, zone: String, with account: String, role: WireRole) async throws {
        guard role != .owner else { throw SyncError("a zone is shared with the role read or write") }
        let remote = try requireOwnZone(vault, zone)
        let client = try remote.client()
        try await client.createZone(owner: remote.account, name: zone)
        try await client.share(owner: remote.account, name: zone, with: account, role: role)
        try vault.catalogTransaction { w in try w.setShared(true, zone: zone) }
    }

    /// Stops sharing one of this account's zones with `account`: from now on the server answers
    /// that account's requests about the zone and its blobs as if they did not exist.
    public static func unshare(_ vault: Vault, zone: String, with account: String) async throws {
        let remote = try requireOwnZone(vault, zone)
        let client = try remote.client()
        try await client.unshare(owner: remote.account, name: zone, with: account)
        let left = try await client.shares(owner: remote.account, name: zone)
        try vault.catalogTransaction { w in try w.setShared(!left.isEmpty, zone: zone) }
    }
}

extension ZoneRole {
    /// The catalog's role of a zone the server gives this role (the two enums share their values).
    init(_ wire: WireRole) {
        switch wire {
        case .owner: self = .owner
        case .read: self = .read
        case .write: self = .write
        }
    }
}
