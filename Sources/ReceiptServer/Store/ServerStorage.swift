import BlobStore

/// The narrow storage under the server's rules (Rules/): transactions of plain reads and writes,
/// no decision. `ServerCatalog` (Store/SQLite) and `PostgresServerStore` (Store/Postgres) implement
/// it in SQL only; what is checked, in what order and what is written lives once in Rules/
/// (docs/DESIGN.md, "Rules over storage"). Methods throw storage failures only.
public protocol ServerStorage: AnyObject, Sendable {
    /// The blob tree (`blobs/`, `interim/`) under the data folder.
    var blobs: BlobStore { get }

    /// Runs `body` in one transaction of `access`. A write transaction is atomic (committed when
    /// `body` returns, rolled back when it throws, its error rethrown as it is) and serialised
    /// against every other write transaction touching the zone it locks (`zone(…, lock: true)`):
    /// SQLite runs one writer at a time, PostgreSQL holds the zone's row lock. A read transaction
    /// sees committed data; the rules do not rely on one snapshot across its reads.
    func transaction<T: Sendable>(_ access: StorageAccess, _ body: (any StorageTransaction) async throws -> T) async throws -> T
}

public enum StorageAccess: Sendable { case read, write }

/// A zone row, with the role the asking account holds by a share (nil for none).
public struct StoredZone: Sendable {
    public let id: Int64
    public let uid: String
    public let ownerID: Int64
    public let owner: String
    public let name: String
    /// The zone's sequence: the last change number given.
    public let seq: Int64
    public let shareRole: String?
}

/// A record row of a change list.
public struct StoredChange: Sendable {
    public let id: String
    public let changeTag: String
    public let seq: Int64
    public let payload: String?
}

/// A record as stored.
public struct StoredRecord: Sendable {
    public let changeTag: String
    public let payload: String?
}

/// An account's quota row.
public struct StoredQuota: Sendable {
    public let name: String
    public let quota: Int64?
}

/// The reads and writes of one transaction: each one statement's worth, no rule.
public protocol StorageTransaction: Sendable {
    // Zones and records.
    /// The zone `owner/name` with `account`'s share role; with `lock`, its row is locked until the
    /// transaction ends.
    func zone(owner: String, name: String, account: Int64, lock: Bool) async throws -> StoredZone?
    func record(zone: Int64, id: String) async throws -> StoredRecord?
    /// Inserts or replaces the record and its blob references.
    func saveRecord(zone: Int64, id: String, changeTag: String, seq: Int64, payload: String?, blobs: [String]) async throws
    /// Sets the zone's sequence and adds `recordBytes` to its record bytes.
    func advanceZone(_ zone: Int64, seq: Int64, recordBytes: Int64) async throws
    /// The records changed after `seq`, oldest first, at most `limit`.
    func changes(zone: Int64, after seq: Int64, limit: Int) async throws -> [StoredChange]

    // Blobs.
    /// The blob row's size, nil without a row.
    func blobSize(_ sha256: String) async throws -> Int64?
    /// Whether the account uploaded the blob (a possession row).
    func holds(account: Int64, blob sha256: String) async throws -> Bool
    /// Whether a record of a zone the account owns or is shared references the blob.
    func readsZoneReferencing(account: Int64, blob sha256: String) async throws -> Bool
    /// Inserts the blob row or moves its `touchedAt`, and the account's possession row.
    func reserveBlob(_ sha256: String, size: Int64, touchedAt: Int64, possessor: Int64) async throws
    func touchBlob(_ sha256: String, at: Int64) async throws

    // Quotas.
    /// The accounts' names and quotas; in a write transaction their rows stay locked until it ends
    /// (taken in id order, so two transactions over the same accounts wait instead of deadlocking).
    func quotas(accounts: [Int64]) async throws -> [(id: Int64, quota: StoredQuota)]
    /// The bytes counted against the account (QuotaRules.swift says what counts).
    func usage(account: Int64) async throws -> StorageUse
}
