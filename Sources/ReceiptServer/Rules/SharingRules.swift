import BlobStore
import ReceiptWire

/// Accounts, tokens, zones and sharing: the refusals both stores give, written once. A store looks
/// up what a rule needs inside its transaction and throws what the rule returns.
extension ServerRules {
    /// A zone is created under the caller's own account only.
    static func checkCreatesOwnZone(owner: String, caller: Account) throws {
        guard owner == caller.name else {
            throw ServerError(.forbidden, "zones can only be created under the caller's own account \(caller.name), not \(owner)")
        }
    }

    /// A zone is shared as read or write; its owner is its owner already.
    static func checkShareRole(_ role: WireRole) throws {
        guard role != .owner else { throw ServerError.bad("a zone can be shared as read or write, not owner") }
    }

    /// The account a zone is shared with (or unshared from): it must exist and not be the owner.
    static func shareTarget(_ target: Int64?, account: String, zone: VisibleZone, caller: Account, unsharing: Bool = false) throws -> Int64 {
        guard let target else { throw ServerError.notFound("account \(account)") }
        guard unsharing || target != caller.id else {
            throw ServerError.bad("the owner of \(zoneLabel(zone.owner, zone.name)) cannot share it with itself")
        }
        return target
    }

    static func accountNotFound(_ name: String) -> ServerError { ServerError.notFound("the account \(name)") }

    static func accountExists(_ name: String) -> ServerError { ServerError(.conflict, "the account \(name) already exists") }

    static func tokenLabelTaken(account name: String, label: String) -> ServerError {
        ServerError(.conflict, "the account \(name) already has a token labelled \(label): revoke it first or pick another label")
    }

    static func tokenNotFound(account name: String, label: String) -> ServerError {
        ServerError.notFound("the token labelled \(label) of the account \(name)")
    }

    /// An account that owns zones shared with others is removed only with them (`--delete-zones`).
    static func checkRemovable(account name: String, sharedZones: [String], deleteZones: Bool) throws {
        guard sharedZones.isEmpty || deleteZones else {
            throw ServerError(.conflict, "the account \(name) owns zones shared with others (\(sharedZones.joined(separator: ", "))): "
                + "unshare them first, or pass --delete-zones to delete them for everybody")
        }
    }

    /// Whether `token` has a token's shape (64 lowercase hex digits): others are not looked up.
    static func isTokenShaped(_ token: String) -> Bool { token.utf8.count == 64 && WireName.isValidBlobAddress(token) }

    /// A presented token matches the stored hash, compared without an early exit.
    static func tokenMatches(stored: String, presented: String) -> Bool {
        constantTimeEqual(Array(stored.utf8), Array(presented.utf8))
    }

    /// A blob address from a client: 64 lowercase hex digits, else invalid.
    static func blobAddress(_ text: String) throws -> BlobID {
        guard let id = BlobID(hex: text), id.hex == text else {
            throw ServerError.bad("\(text) is not a blob address (64 lowercase hex digits)")
        }
        return id
    }
}
