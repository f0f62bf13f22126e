import GRDB
import NIOConcurrencyHelpers

/// The server catalog's GRDB pool, with one write transaction at a time held across awaits, and
/// read transactions each holding one reader connection across awaits.
///
/// The rules (Rules/) run a transaction as a series of awaited storage calls; GRDB's writer queue
/// serialises single accesses, not a transaction spanning several. So every write here takes the
/// writer's turn first: `transaction` holds it from `BEGIN IMMEDIATE` to `COMMIT`, `write` for one
/// GRDB transaction. Nothing writes through the raw pool (`database`) while the server runs.
/// `DatabasePool.read` takes a synchronous closure, so a read transaction (`readTransaction`) holds
/// one of `readers` instead: one snapshot for all its statements, and a page cache SQLite keeps
/// for the whole transaction (one `pool.read` per statement dropped it whenever a push had committed).
final class SQLitePool: Sendable {
    let database: DatabasePool
    private let turn = Turns(1)
    private let readers: SQLiteReaders

    init(_ database: DatabasePool, configuration: Configuration) {
        self.database = database
        readers = SQLiteReaders(path: database.path, configuration: configuration)
    }

    func read<T: Sendable>(_ value: @Sendable (Database) throws -> T) async throws -> T {
        try await database.read(value)
    }

    func write<T: Sendable>(_ updates: @Sendable (Database) throws -> T) async throws -> T {
        await turn.take()
        defer { turn.give() }
        return try await database.write(updates)
    }

    /// Runs `body` between `BEGIN IMMEDIATE` and `COMMIT` on the writer, holding the turn; rolled
    /// back when it throws. Neither end can be cancelled with the request's task, so no transaction
    /// is ever left open for the next writer.
    func transaction<T>(_ body: () async throws -> T) async throws -> T {
        await turn.take()
        defer { turn.give() }
        try inTransaction { try $0.execute(sql: "BEGIN IMMEDIATE") }
        do {
            let value = try await body()
            // The commit waits for the disk (synchronous = FULL): off this thread, in a task of its own.
            let database = self.database
            try await Task { try await database.writeWithoutTransaction { try $0.execute(sql: "COMMIT") } }.value
            return value
        } catch {
            try? inTransaction { try $0.execute(sql: "ROLLBACK") }
            throw error
        }
    }

    /// One statement of the open transaction, run on this thread: the turn is ours and the writer
    /// idle, so the statement's microseconds cost less than two thread hops.
    func inTransaction<T>(_ statement: (Database) throws -> T) throws -> T {
        try database.writeWithoutTransaction(statement)
    }

    /// Runs `body` in one read transaction on a reader held from its first statement to its end.
    func readTransaction<T>(_ body: (DatabaseQueue) async throws -> T) async throws -> T {
        try await readers.transaction(body)
    }

    func close() throws {
        try readers.close()
        try database.close()
    }
}

/// `count` first-come first-served turns, awaited without blocking a thread.
final class Turns: Sendable {
    private let state: NIOLockedValueBox<(free: Int, waiting: [CheckedContinuation<Void, Never>])>

    init(_ count: Int) { state = NIOLockedValueBox((count, [])) }

    func take() async {
        await withCheckedContinuation { (next: CheckedContinuation<Void, Never>) in
            let now = state.withLockedValue { state -> Bool in
                if state.free > 0 { state.free -= 1; return true }
                state.waiting.append(next)
                return false
            }
            if now { next.resume() }
        }
    }

    func give() {
        let next = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            if state.waiting.isEmpty { state.free += 1; return nil }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
