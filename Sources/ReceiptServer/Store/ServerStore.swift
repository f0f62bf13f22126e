import BlobStore
import ReceiptWire

/// The server catalog: accounts, tokens, zones, shares, records, change tokens, texts and upload
/// bookkeeping. Its verbs are the rules', written once in Rules/ over the storage protocol
/// (ServerStorage.swift); a store conforms by answering that protocol in its own SQL. Two do, and
/// pass one conformance suite: `ServerCatalog` (embedded SQLite in the data folder, a household's
/// default) and `PostgresServerStore` (a provider's PostgreSQL, shared by several server
/// processes). Blobs are files under the data folder either way.
public protocol ServerStore: ServerStorage {
    /// Releases the database (connections, file handles).
    func close() async throws
}

extension ServerCatalog: ServerStore {}

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
