import BlobStore
import Foundation
import Logging
import PostgresNIO

/// The server catalog in PostgreSQL, for a provider running several stateless server processes in
/// front of one database and one shared blob folder. Every operation is one transaction; a push
/// locks its zone's row (`SELECT … FOR UPDATE`), so change tokens strictly increase per zone and a
/// stale change tag is a conflict whichever process commits first. Commits are durable when
/// acknowledged (PostgreSQL's `synchronous_commit` default), so a killed process loses nothing it answered.
public final class PostgresServerStore: ServerStore {
    public let blobs: BlobStore
    public let url: PostgresURL
    let client: PostgresClient
    private let running: Task<Void, Never>
    /// Silent, unless RECEIPT_POSTGRES_LOG is set (then postgres-nio's debug log goes to stderr).
    static let quiet: Logger = {
        guard ProcessInfo.processInfo.environment["RECEIPT_POSTGRES_LOG"] != nil else {
            return Logger(label: "receipt-postgres", factory: { _ in SwiftLogNoOpLogHandler() })
        }
        var logger = Logger(label: "receipt-postgres", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = .debug
        return logger
    }()

    private init(url: PostgresURL, client: PostgresClient, running: Task<Void, Never>, blobs: BlobStore) {
        self.url = url
        self.client = client
        self.running = running
        self.blobs = blobs
    }

    /// Connects, brings the schema up to date (refusing a database of a newer receipt), and prepares
    /// the blob tree under `dataPath`.
    public static func open(_ url: PostgresURL, dataPath: String) async throws -> PostgresServerStore {
        let store = try ServerDatabase.prepareBlobs(dataPath)
        let configuration: PostgresClient.Configuration
        if url.host.hasPrefix("/") {
            configuration = .init(unixSocketPath: url.host + "/.s.PGSQL.\(url.port)", username: url.user,
                                  password: url.password, database: url.database)
        } else {
            configuration = .init(host: url.host, port: url.port, username: url.user, password: url.password,
                                  database: url.database, tls: .disable)
        }
        // One direct connection first: a database that is down or refuses us is one clear error now,
        // rather than a pool retrying until its request times out.
        do {
            let probe: PostgresConnection.Configuration = url.host.hasPrefix("/")
                ? .init(unixSocketPath: url.host + "/.s.PGSQL.\(url.port)", username: url.user, password: url.password, database: url.database)
                : .init(host: url.host, port: url.port, username: url.user, password: url.password, database: url.database, tls: .disable)
            let connection = try await PostgresConnection.connect(configuration: probe, id: 0, logger: quiet)
            try await connection.close()
        } catch {
            throw ServerError(.failed, "the PostgreSQL database \(url) cannot be reached: "
                + ((error as? PSQLError)?.serverInfo?[.message] ?? (error as? PSQLError).map { "\($0.code)" } ?? "\(error)"))
        }
        let client = PostgresClient(configuration: configuration, backgroundLogger: quiet)
        let running = Task { await client.run() }
        let opened = PostgresServerStore(url: url, client: client, running: running, blobs: store)
        do {
            try await PostgresSchema.migrate(opened)
        } catch {
            try? await opened.close()
            throw opened.describe(error)
        }
        return opened
    }

    public func close() async throws {
        running.cancel()
        await running.value
    }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws (its
    /// error is rethrown as it is, a ServerError staying a ServerError).
    func transaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        do {
            return try await client.withConnection { connection in
                try await connection.query("BEGIN", logger: Self.quiet)
                let value: T
                do {
                    value = try await body(connection)
                } catch {
                    _ = try? await connection.query("ROLLBACK", logger: Self.quiet)
                    throw error
                }
                try await connection.query("COMMIT", logger: Self.quiet)
                return value
            }
        } catch {
            throw describe(error)
        }
    }

    /// A ServerError as it is; a database error as a failure naming the database and PostgreSQL's message.
    func describe(_ error: Error) -> Error {
        if error is ServerError || error is CancellationError { return error }
        if let pg = error as? PSQLError {
            let message = pg.serverInfo?[.message] ?? "\(pg.code)"
            return ServerError(.failed, "the PostgreSQL database \(url) failed: \(message)")
        }
        return ServerError(.failed, "the PostgreSQL database \(url) failed: \(String(describing: error))")
    }

}

extension PostgresConnection {
    /// Every row of the query's answer.
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await self.query(query, logger: PostgresServerStore.quiet).collect()
    }

    /// The first column of the first row, or nil when there is no row.
    func value<T: PostgresDecodable>(_ query: PostgresQuery, as type: T.Type = T.self) async throws -> T? {
        guard let row = try await rows(query).first else { return nil }
        return try row.decode(T.self)
    }

    /// Runs a statement; its rows (for `RETURNING`) are counted.
    @discardableResult
    func run(_ query: PostgresQuery) async throws -> Int {
        try await rows(query).count
    }
}
