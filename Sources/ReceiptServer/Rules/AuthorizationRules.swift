import ReceiptWire

/// The one authorization rule, for both stores: a caller can read a zone it owns or that is shared
/// with it; every other zone is reported as not found, whether or not it exists. Only the owner
/// changes a zone's sharing or deletes it.
extension ServerRules {
    /// The caller's role on a zone owned by `ownerID` where the caller's share (if any) is
    /// `shareRole`; nil when the caller cannot read it.
    static func role(ownerID: Int64, shareRole: String?, caller: Account) -> WireRole? {
        if ownerID == caller.id { return .owner }
        return shareRole.flatMap(WireRole.init(rawValue:))
    }

    /// The zone when the caller can read it; not found otherwise.
    static func require(_ zone: VisibleZone?, owner: String, name: String) throws -> VisibleZone {
        guard let zone else { throw ServerError.notFound(zoneLabel(owner, name)) }
        return zone
    }

    /// The zone when the caller owns it; not found when it cannot read it, forbidden when it is not the owner.
    static func requireOwner(_ zone: VisibleZone?, owner: String, name: String) throws -> VisibleZone {
        let zone = try require(zone, owner: owner, name: name)
        guard zone.role == .owner else {
            throw ServerError(.forbidden, "only the owner of \(zoneLabel(owner, name)) can change its sharing or delete it")
        }
        return zone
    }
}

/// A zone the caller can read, with the sequence its row held when read.
struct ReadZone: Sendable {
    let visible: VisibleZone
    let seq: Int64
}

extension ServerRules {
    /// The zone `owner/name` as `caller` may see it; nil when absent or not readable by the caller.
    static func zone(_ tx: any StorageTransaction, owner: String, name: String, caller: Account, lock: Bool = false) async throws -> ReadZone? {
        guard let row = try await tx.zone(owner: owner, name: name, account: caller.id, lock: lock),
              let role = role(ownerID: row.ownerID, shareRole: row.shareRole, caller: caller) else { return nil }
        return ReadZone(visible: VisibleZone(id: row.id, uid: row.uid, owner: row.owner, ownerID: row.ownerID, name: row.name, role: role),
                        seq: row.seq)
    }

    /// The zone when the caller can read it; not found otherwise. With `lock`, its row stays locked
    /// until the transaction ends, which serialises every push to the zone across processes.
    static func requireZone(_ tx: any StorageTransaction, owner: String, name: String, caller: Account, lock: Bool = false) async throws -> ReadZone {
        guard let zone = try await zone(tx, owner: owner, name: name, caller: caller, lock: lock) else {
            throw ServerError.notFound(zoneLabel(owner, name))
        }
        return zone
    }
}

extension ServerRules {
    /// The zone when the caller owns it; not found when it cannot read it, forbidden when it is not the owner.
    static func requireOwner(_ tx: any StorageTransaction, owner: String, name: String, caller: Account) async throws -> VisibleZone {
        try requireOwner(await zone(tx, owner: owner, name: name, caller: caller)?.visible, owner: owner, name: name)
    }
}
