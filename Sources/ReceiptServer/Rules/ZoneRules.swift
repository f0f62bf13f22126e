import BlobStore
import ReceiptWire

/// Zones and shares: the flow of each request, written once over the storage protocol
/// (AuthorizationRules.swift and SharingRules.swift hold the verdicts).
extension ServerStore {
    /// Every zone the caller owns or participates in, sorted by owner then name.
    public func zones(for caller: Account) async throws -> [WireZone] {
        try await transaction(.read) { tx in
            try await tx.zones(of: caller.id).compactMap { zone in
                guard let role = zone.shareRole.map(WireRole.init(rawValue:)) ?? .owner else { return nil }
                return WireZone(owner: zone.owner, name: zone.name, role: role, shared: zone.shared)
            }
        }
    }

    /// Creates the caller's zone `name`; an existing one is kept as it is. Returns true when created.
    public func createZone(owner: String, name: String, caller: Account) async throws -> Bool {
        try ServerRules.checkCreatesOwnZone(owner: owner, caller: caller)
        return try await transaction(.write) { tx in
            try await tx.insertZone(owner: caller.id, name: name, uid: SecureRandom.hex(8), createdAt: ServerRules.now())
        }
    }

    /// Deletes one of the caller's zones with its records and shares. Blob bytes stay in the store
    /// (content-addressed: another zone may reference them).
    public func deleteZone(owner: String, name: String, caller: Account) async throws {
        try await transaction(.write) { tx in
            let zone = try await ServerRules.requireOwner(tx, owner: owner, name: name, caller: caller)
            try await tx.deleteZone(zone.id)
        }
    }

    public func shares(owner: String, name: String, caller: Account) async throws -> [WireShare] {
        try await transaction(.read) { tx in
            let zone = try await ServerRules.requireZone(tx, owner: owner, name: name, caller: caller)
            return try await tx.shares(zone: zone.visible.id).compactMap { share in
                WireRole(rawValue: share.role).map { WireShare(account: share.account, role: $0) }
            }
        }
    }

    /// Shares the caller's zone with `account` as `role` (read or write), replacing an earlier role.
    public func share(owner: String, name: String, with account: String, role: WireRole, caller: Account) async throws {
        try ServerRules.checkShareRole(role)
        try await transaction(.write) { tx in
            let zone = try await ServerRules.requireOwner(tx, owner: owner, name: name, caller: caller)
            let target = try ServerRules.shareTarget(await tx.accountID(named: account), account: account, zone: zone, caller: caller)
            try await tx.setShare(zone: zone.id, account: target, role: role.rawValue)
            // The zone's texts become readable to the participant: its vaults ask again.
            try await tx.bumpTextSequence(account: target)
        }
    }

    /// Removes `account` from the caller's zone; from then on every request of that account about
    /// the zone or its blobs is answered as if they did not exist. Unsharing a non-participant is not an error.
    public func unshare(owner: String, name: String, with account: String, caller: Account) async throws {
        try await transaction(.write) { tx in
            let zone = try await ServerRules.requireOwner(tx, owner: owner, name: name, caller: caller)
            let target = try ServerRules.shareTarget(await tx.accountID(named: account), account: account, zone: zone, caller: caller,
                                                     unsharing: true)
            try await tx.removeShare(zone: zone.id, account: target)
            // Its uploads of the zone's blobs would now count against it (QuotaRules.swift), for
            // bytes only the zone's owner can remove: it shows it holds them again if it needs to.
            try await tx.dropPossessions(account: target, referencedBy: zone.id)
        }
    }
}
