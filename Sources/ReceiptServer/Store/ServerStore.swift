import BlobStore
import ReceiptWire

/// The server catalog's operations: accounts, tokens, zones, shares, records, change tokens and
/// upload bookkeeping. Two implementations pass one conformance suite: `ServerCatalog` (embedded
/// SQLite in the data folder, a household's default) and `PostgresServerStore` (a provider's
/// PostgreSQL, shared by several server processes). Blobs are files under the data folder either way.
///
/// The rules over the storage protocol (Rules/) implement push, pull and blob bookkeeping once for
/// both; the requirements below are what each store still answers itself.
public protocol ServerStore: ServerStorage {

    // Accounts and tokens (the `receipt server account-*|token-*` commands).
    func addAccount(_ name: String, quota: Int64?) async throws -> String
    func addToken(account name: String, label: String) async throws -> String
    func rotateToken(account name: String, label: String?) async throws -> String
    func revokeToken(account name: String, label: String) async throws
    func setQuota(account name: String, bytes: Int64?) async throws
    func removeAccount(_ name: String, deleteZones: Bool) async throws -> RemovedAccount
    func accounts() async throws -> [AccountSummary]
    /// The account holding `token`, or nil; looked up on every request.
    func authenticate(token: String) async throws -> Account?

    // Zones and shares.
    func zones(for caller: Account) async throws -> [WireZone]
    func createZone(owner: String, name: String, caller: Account) async throws -> Bool
    func deleteZone(owner: String, name: String, caller: Account) async throws
    func shares(owner: String, name: String, caller: Account) async throws -> [WireShare]
    func share(owner: String, name: String, with account: String, role: WireRole, caller: Account) async throws
    func unshare(owner: String, name: String, with account: String, caller: Account) async throws

    // The web view's passwords and sessions (`receipt server passwd|sessions-revoke`).
    /// Sets the account's web password (and ends its open web sessions).
    func setPassword(account name: String, password: String) async throws
    /// Ends every web session of the account; returns how many there were.
    func revokeSessions(account name: String) async throws -> Int

    /// `receipt server gc`: deletes the blobs no record references and no upload touched within the grace.
    func collectGarbage(graceSeconds: Int64, dryRun: Bool) async throws -> ServerGCReport

    // Extracted text (docs/PROTOCOL.md, "Extracted text"); addresses and versions already validated.
    /// Keeps each text (its `sha256` set) for every owner of a zone the caller can read that
    /// references the blob, unless that owner has one of that blob and version already (the first
    /// stays), in one transaction with one move of each reader's counter; returns the addresses
    /// refused because the caller cannot read a zone referencing the blob. Over quota, keeping nothing,
    /// when the texts would take an owner past its quota.
    func putTexts(_ texts: [WireText], version: String, caller: Account) async throws -> [String]
    func textWant(_ blobs: [String], version: String, caller: Account) async throws -> [String]
    func texts(_ blobs: [String], version: String, caller: Account, byteLimit: Int) async throws -> WireTextFetchResponse
    /// The caller's text counter: it moves whenever a text the caller can read is stored.
    func textSequence(caller: Account) async throws -> Int64

    /// Releases the database (connections, file handles).
    func close() async throws
}

extension ServerCatalog: ServerStore {}

extension ServerStore {
    /// `PUT /v1/text/{sha256}/{version}`: one text; not found when the caller cannot read the blob.
    func putText(_ sha256: String, version: String, _ text: WireText, caller: Account) async throws {
        let refused = try await putTexts([WireText(sha256: sha256, text: text.text, failed: text.failed)], version: version,
                                         caller: caller)
        if !refused.isEmpty { throw ServerError.notFound("blob \(sha256)") }
    }

    /// The one write order of every upload (sync or web): record possession and reserve the rows
    /// (quota checked), install the verified files durably, then end the reservation.
    func installUploads(_ staged: [StagedBlob], caller: Account) async throws {
        try await registerUploads(staged.map { ($0.id, $0.size) }, caller: caller)
        _ = try blobs.install(staged)
        try await uploadsInstalled(staged.map(\.id))
    }
}

/// Where a server keeps its catalog: the embedded SQLite file in the data folder, or PostgreSQL.
public enum ServerDatabase: Sendable, Equatable {
    case embedded
    case postgres(PostgresURL)

    /// `nil` (no `--database`): embedded; otherwise a `postgres://` URL.
    public init(_ text: String?) throws {
        guard let text else { self = .embedded; return }
        self = .postgres(try PostgresURL(text))
    }

    /// Opens the server's catalog: `dataPath` holds the blobs (and, embedded, `server.sqlite`).
    public func open(dataPath: String) async throws -> any ServerStore {
        switch self {
        case .embedded: return try ServerCatalog(dataPath: dataPath)
        case .postgres(let url): return try await PostgresServerStore.open(url, dataPath: dataPath)
        }
    }

    /// The blob tree of a data folder whose catalog is elsewhere (created when absent).
    static func prepareBlobs(_ dataPath: String) throws -> BlobStore {
        do {
            try FileSystem.makeDirectories(dataPath, mode: 0o700)
            let store = BlobStore(root: dataPath)
            try store.prepare()
            return store
        } catch let error as PathError {
            throw ServerError(.failed, "the server data folder \(dataPath) cannot be prepared: \(error.description)")
        }
    }

    /// Whether several server processes may share the data folder (they share the catalog through the database).
    var isShared: Bool { self != .embedded }
}
