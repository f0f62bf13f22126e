import GRDB
import NIOConcurrencyHelpers

/// The read-only connections a read transaction of the rules holds across its awaits (the pool's
/// `read` takes a synchronous closure): at most `maximumReaderCount` (GRDB's pool bound, 5 by
/// default) held at once, the others waiting their turn; opened on the catalog's WAL file when
/// first needed and kept for the next transaction.
final class SQLiteReaders: Sendable {
    private let path: String
    private let configuration: Configuration
    private let turns: Turns
    private let idle = NIOLockedValueBox<[DatabaseQueue]>([])

    init(path: String, configuration: Configuration) {
        var readOnly = configuration
        readOnly.readonly = true
        // The transaction is left open between the statements' accesses, as the writer's is.
        readOnly.allowsUnsafeTransactions = true
        self.path = path
        self.configuration = readOnly
        turns = Turns(readOnly.maximumReaderCount)
    }

    /// Runs `body` in one deferred read transaction (one snapshot from its first statement) on a
    /// held reader. The end is synchronous: it runs whatever happens, cancellation included, so no
    /// reader goes back idle with a transaction open.
    func transaction<T>(_ body: (DatabaseQueue) async throws -> T) async throws -> T {
        await turns.take()
        defer { turns.give() }
        let reader = try idle.withLockedValue { $0.isEmpty ? nil : $0.removeFirst() }
            ?? DatabaseQueue(path: path, configuration: configuration)
        defer { end(reader) }
        try reader.inDatabase { try $0.execute(sql: "BEGIN DEFERRED") }
        return try await body(reader)
    }

    private func end(_ reader: DatabaseQueue) {
        let ended = reader.inDatabase { db -> Bool in
            if db.isInsideTransaction { try? db.execute(sql: "COMMIT") }
            return !db.isInsideTransaction
        }
        // A reader that could not end its transaction is dropped (closed as it goes), never reused.
        if ended { idle.withLockedValue { $0.append(reader) } }
    }

    func close() throws {
        let readers = idle.withLockedValue { readers in defer { readers = [] }; return readers }
        for reader in readers { try reader.close() }
    }
}
