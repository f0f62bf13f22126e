import BlobStore
import ReceiptWire
import WebForms

/// What the web view needs of a server catalog beyond the sync API's storage: the password and
/// session rows and the list's reads, each a query and no rule. Both catalogs implement it (the
/// embedded SQLite one in Store/SQLite/ServerCatalog+Web*.swift, PostgreSQL's in
/// PostgresServerStore+Web*.swift); who may read what, and the password and session rules, are
/// decided once in Rules/WebRules.swift.
protocol WebStore: ServerStore {
    /// The account named `name` with its stored web password hash; nil when it has no password.
    func webPassword(account name: String) async throws -> (account: Account, hash: String)?
    /// Deletes the sessions expired by `createdAt` and stores a new one.
    func insertSession(idHash: String, account: Int64, csrf: String, createdAt: Int64, expiresAt: Int64) async throws
    /// The session with this id hash that is live at `now`.
    func session(idHash: String, liveAt now: Int64) async throws -> WebSession?
    func deleteSession(idHash: String) async throws

    /// One page of the zone's live receipts, with the count and the totals of every one `filter` matches.
    func webZonePage(_ zone: VisibleZone, filter: WebFilter, offset: Int, limit: Int) async throws -> WebZonePage
    /// The zone's live receipt `id`; nil when absent or deleted.
    func webReceipt(zone: Int64, id: String) async throws -> WebReceiptRow?
    /// How many live receipts of the zone carry readings to review (`filled` or `suggestions`).
    func webReviewCount(zone: Int64) async throws -> Int
    /// The zone's review queue from `start` (ordered by id): its count, the receipt to review and
    /// its twins (same merchant, date, total and currency: a re-scan).
    func webReviewQueue(_ zone: VisibleZone, start: WebReviewStart) async throws -> WebReviewQueue
    /// Of `blobs`, those a live receipt of the zone already attaches, each with one such receipt's id.
    func webReceiptsAttaching(_ blobs: [String], zone: Int64) async throws -> [String: String]
}

extension ServerCatalog: WebStore {}
extension PostgresServerStore: WebStore {}

extension WebFilter {
    /// The list's order, for both catalogs: `newestDate` sorts by date descending, undated last
    /// (each database says it its own way, as its index does), `added` is the creation time column.
    func order(newestDate: String, added: String) -> String {
        byDate ? "\(newestDate), \(added) DESC" : "\(added) DESC, \(newestDate)"
    }
}
