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
