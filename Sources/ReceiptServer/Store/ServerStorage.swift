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
    /// is one snapshot of committed data from its first read to its end (SQLite: one reader
    /// connection in one read transaction; PostgreSQL: REPEATABLE READ).
    func transaction<T: Sendable>(_ access: StorageAccess, _ body: (any StorageTransaction) async throws -> T) async throws -> T

    /// After a gc that removed: forgets what the database keeps only until the server has
    /// served and been collected from (SQLite: its pre-upgrade copy).
    func collected() throws
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

/// A zone in an account's list.
public struct StoredZoneListing: Sendable {
    public let owner: String
    public let name: String
    /// The account's share role; nil when it owns the zone.
    public let shareRole: String?
    /// Whether the zone is shared with anybody.
    public let shared: Bool
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
    /// The zones the account owns (`shareRole` nil) or is shared (its role), sorted by owner then name.
    func zones(of account: Int64) async throws -> [StoredZoneListing]
    /// Inserts the zone; false when the owner has one of that name already.
    func insertZone(owner: Int64, name: String, uid: String, createdAt: Int64) async throws -> Bool
    /// Deletes the zone with its records, their blob references and its shares.
    func deleteZone(_ zone: Int64) async throws
    /// The zone's shares: each account's name and role, sorted by name.
    func shares(zone: Int64) async throws -> [(account: String, role: String)]
    func setShare(zone: Int64, account: Int64, role: String) async throws
    func removeShare(zone: Int64, account: Int64) async throws
    /// Forgets the account's possession rows of the blobs the zone's records reference.
    func dropPossessions(account: Int64, referencedBy zone: Int64) async throws
    /// Moves the account's text counter (docs/PROTOCOL.md, "Extracted text").
    func bumpTextSequence(account: Int64) async throws

    // Accounts and tokens.
    func accountID(named name: String) async throws -> Int64?
    /// Inserts the account; nil when the name is taken.
    func insertAccount(name: String, quota: Int64?, createdAt: Int64) async throws -> Int64?
    func hasToken(account: Int64, label: String) async throws -> Bool
    func insertToken(account: Int64, label: String, hash: String, createdAt: Int64) async throws
    /// Deletes the account's token labelled `label` (all its tokens when nil); returns how many.
    func deleteTokens(account: Int64, label: String?) async throws -> Int
    func setQuota(account: Int64, bytes: Int64?) async throws
    /// The names of the zones the account owns (only those shared with somebody when `sharedOnly`), sorted.
    func zoneNames(owner: Int64, sharedOnly: Bool) async throws -> [String]
    /// Deletes the account with its tokens, its shares in others' zones, its zones (with their
    /// records and shares) and its possessions; returns the shares and tokens it had.
    func deleteAccount(_ account: Int64) async throws -> (shares: Int, tokens: Int)
    /// Every account's id, name and quota, sorted by name.
    func allAccounts() async throws -> [(id: Int64, quota: StoredQuota)]
    func tokens(account: Int64) async throws -> [AccountSummary.Token]
    /// Sets the account's web password hash.
    func setPassword(account: Int64, hash: String, changedAt: Int64) async throws
    /// Deletes the account's web sessions; returns how many.
    func deleteSessions(account: Int64) async throws -> Int
    /// The account holding the token whose hash is `hash`, with the hash as stored.
    func tokenHolder(hash: String) async throws -> (account: Account, storedHash: String)?

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

    // Garbage collection (GCRules.swift).
    /// The blobs no record references whose `touchedAt` is at or before `cutoff`, by address.
    func collectableBlobs(touchedBy cutoff: Int64) async throws -> [(sha256: String, size: Int64)]
    /// Whether the blob is still collectable (its row locked until the transaction ends).
    func lockCollectable(_ sha256: String, touchedBy cutoff: Int64) async throws -> Bool
    /// Deletes the blob's row and the possessions of it.
    func deleteBlob(_ sha256: String) async throws
    /// Counts (or deletes) the texts an owner kept of blobs none of its zones references any more.
    func orphanTexts(delete: Bool) async throws -> Int

    // Extracted text (TextRules.swift).
    /// The owners (by id) of the zones the reader owns or is shared that reference the blob.
    func textOwners(blob sha256: String, reader: Int64) async throws -> [Int64]
    /// Inserts the owner's text (`text`, or the extractor's `failure`); false when it has one of
    /// that blob and version already.
    func insertText(owner: Int64, blob sha256: String, version: String, text: String?, failure: String?, uploadedAt: Int64) async throws -> Bool
    func hasText(owner: Int64, blob sha256: String, version: String) async throws -> Bool
    /// The accounts the owner's zones referencing the blob are shared with.
    func participants(owner: Int64, referencing sha256: String) async throws -> [Int64]
    func textSequence(account: Int64) async throws -> Int64
    /// The text of the blob and version an owner of a zone the reader can read (and referencing
    /// the blob) keeps: the reader's own first, else the owner with the smallest id.
    func readableText(blob sha256: String, version: String, reader: Int64) async throws -> (text: String?, failure: String?)?

    // Quotas.
    /// The accounts' names and quotas; in a write transaction their rows stay locked until it ends
    /// (taken in id order, so two transactions over the same accounts wait instead of deadlocking).
    func quotas(accounts: [Int64]) async throws -> [(id: Int64, quota: StoredQuota)]
    /// The bytes counted against the account (QuotaRules.swift says what counts).
    func usage(account: Int64) async throws -> StorageUse
}
