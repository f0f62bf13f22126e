import BlobStore
import ReceiptWire
import WebForms

/// The web view's verbs, written once over its storage (Store/WebStore.swift): every read first
/// finds its zone through the sync API's path (`ServerRules.requireZone`, AuthorizationRules.swift),
/// so a zone the account cannot read is "not found" whether or not it exists; passwords and
/// sessions follow PasswordRules.swift.
extension WebStore {
    /// The zone as the caller sees it (not found when it cannot read it).
    func webZone(owner: String, name: String, caller: Account) async throws -> VisibleZone {
        try await transaction(.read) { tx in try await ServerRules.requireZone(tx, owner: owner, name: name, caller: caller).visible }
    }

    /// One page of the zone's live receipts, newest added first (or by date), with the count and
    /// the totals of every receipt the filter matches.
    func webZonePage(owner: String, name: String, filter: WebFilter, offset: Int, limit: Int,
                     caller: Account) async throws -> WebZonePage {
        try await webZonePage(webZone(owner: owner, name: name, caller: caller), filter: filter, offset: offset, limit: limit)
    }

    /// A live receipt of a zone the caller can read, with the zone; not found otherwise (absent, deleted
    /// or not readable: the same answer). A malformed id is not found before the zone is looked up.
    func webReceipt(owner: String, name: String, id: String, caller: Account) async throws -> (VisibleZone, WebReceiptRow) {
        guard WireName.isValidRecordID(id) else { throw ServerError.notFound("receipt \(id)") }
        let zone = try await webZone(owner: owner, name: name, caller: caller)
        guard let row = try await webReceipt(zone: zone.id, id: id) else { throw ServerError.notFound("receipt \(id)") }
        return (zone, row)
    }

    func webReviewCount(owner: String, name: String, caller: Account) async throws -> Int {
        try await webReviewCount(zone: webZone(owner: owner, name: name, caller: caller).id)
    }

    func webReviewQueue(owner: String, name: String, start: WebReviewStart, caller: Account) async throws -> WebReviewQueue {
        try await webReviewQueue(webZone(owner: owner, name: name, caller: caller), start: start)
    }

    func webReceiptsAttaching(_ blobs: [String], owner: String, name: String, caller: Account) async throws -> [String: String] {
        try await webReceiptsAttaching(blobs, zone: webZone(owner: owner, name: name, caller: caller).id)
    }

    /// The account when `password` is its web password, else nil. An unknown account costs the same
    /// hashing work as a known one (its name's existence is not disclosed by timing).
    func checkPassword(account name: String, password: String) async throws -> Account? {
        guard let stored = try await webPassword(account: name) else {
            _ = ServerRules.passwordMatches(password, stored: ServerRules.decoyHash)
            return nil
        }
        return ServerRules.passwordMatches(password, stored: stored.hash) ? stored.account : nil
    }

    /// Opens a session; returns the id to put in the cookie (only its hash is stored).
    func openSession(for account: Account) async throws -> String {
        let id = SecureRandom.hex(32), now = ServerRules.now()
        try await insertSession(idHash: ServerRules.tokenHash(id), account: account.id, csrf: SecureRandom.hex(32),
                                createdAt: now, expiresAt: now + ServerRules.sessionLifetimeMilliseconds)
        return id
    }

    /// The live session with this cookie value: its account and CSRF token.
    func session(_ id: String) async throws -> WebSession? {
        guard id.utf8.count == 64 else { return nil }
        return try await session(idHash: ServerRules.tokenHash(id), liveAt: ServerRules.now())
    }

    func closeSession(_ id: String) async throws {
        try await deleteSession(idHash: ServerRules.tokenHash(id))
    }
}
