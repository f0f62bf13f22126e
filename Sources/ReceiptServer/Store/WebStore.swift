import BlobStore
import ReceiptWire
import WebForms

/// What the web view needs of a server catalog beyond the sync API's operations: password checks,
/// sessions and the list's reads. Both catalogs implement it (the embedded SQLite one in
/// Store/SQLite/ServerCatalog+Web*.swift, PostgreSQL's in PostgresServerStore+Web.swift), under
/// the same `requireZone` rule as the sync API.
protocol WebStore: ServerStore {
    /// The account when `password` is its web password, else nil (an unknown account costs the same).
    func checkPassword(account name: String, password: String) async throws -> Account?
    /// Opens a session; returns the id to put in the cookie (only its hash is stored).
    func openSession(for account: Account) async throws -> String
    /// The live session with this cookie value.
    func session(_ id: String) async throws -> WebSession?
    func closeSession(_ id: String) async throws

    func webZonePage(owner: String, name: String, filter: WebFilter, offset: Int, limit: Int,
                     caller: Account) async throws -> WebZonePage
    func webReceipt(owner: String, name: String, id: String, caller: Account) async throws -> (VisibleZone, WebReceiptRow)
    func webZone(owner: String, name: String, caller: Account) async throws -> VisibleZone
    /// How many live receipts of the zone carry readings to review (`filled` or `suggestions`).
    func webReviewCount(owner: String, name: String, caller: Account) async throws -> Int
    /// The zone's review queue from `start` (ordered by id): its count, the receipt to review and
    /// its twins (same merchant, date, total and currency: a re-scan).
    func webReviewQueue(owner: String, name: String, start: WebReviewStart, caller: Account) async throws -> WebReviewQueue
    /// Of `blobs`, those a live receipt of the zone already attaches, each with one such receipt's id.
    func webReceiptsAttaching(_ blobs: [String], owner: String, name: String, caller: Account) async throws -> [String: String]
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
