import Foundation
import ReceiptCatalog

/// How a batch's transaction learns what the caller makes of sources that failed while it read
/// them: the messages their items carry, or an error that stops the ingest (and rolls the batch back).
typealias IngestSettle = @Sendable ([(index: Int, error: Error)]) throws -> [String]

/// A batch being installed and written on the span's thread, and its conversation with the calling
/// thread: the failures of its reads go to the caller's `failed` there, and its rows' result comes
/// back once they are written (not yet committed: its span commits later).
final class BatchInFlight<Out: Sendable>: @unchecked Sendable {
    let failures = Parallel.Future<[(index: Int, error: Error)]>()
    let verdict = Parallel.Future<Result<[String], Error>>()
    let written = Parallel.Future<Result<Out, Error>>()
    private var settled = false

    /// Waits for the batch's reads, and answers its failures through `failed` (on this thread).
    func settle<Item>(_ items: [(Item, Int)], _ failed: (Item, Error) throws -> String) throws {
        guard !settled else { return }
        settled = true
        let found = failures.wait()
        do {
            verdict.put(.success(try found.map { try failed(items[$0.index].0, $0.error) }))
        } catch {
            verdict.put(.failure(error))
            throw error
        }
    }

    var settle: IngestSettle {
        { [self] found in
            failures.put(found)
            return try verdict.wait().get()
        }
    }

    /// The batch ended (written, or failed before or while it wrote): the calling thread stops waiting.
    func end(_ result: Result<Out, Error>) {
        failures.put([])  // a batch that failed before its reads were settled
        written.put(result)
    }
}

/// One transaction of the catalog spanning consecutive batches of an ingest, on a thread of its own:
/// batches are written into it one at a time as the calling thread hands them over, and it commits
/// when the caller ends it. Why: at scale every commit rewrites each randomly keyed index page a
/// batch touched (and checkpoints it), so fewer, larger transactions write the catalog's pages
/// fewer times (docs/DESIGN.md, "The ingest path"). A batch that fails rolls the whole span back.
final class IngestSpan: @unchecked Sendable {
    /// A batch's work inside the transaction, and how to tell it the span ended without running it.
    struct Job {
        let run: (CatalogWriter) throws -> Void
        let abandon: (Error) -> Void
    }

    private let condition = NSCondition()
    private var jobs: [Job] = []
    private var ending = false
    /// Set once the span's thread left the transaction: jobs handed over after that are abandoned.
    private var over: Error?
    private var result: Parallel.Future<Result<Void, Error>>!

    /// Items and bytes written into the span so far (the caller ends it at `BatchBudget`'s span limits).
    var items = 0
    var bytes: Int64 = 0

    /// `beforeCommit` runs in the transaction after its last batch: throwing rolls the span back.
    init(_ target: Catalog, beforeCommit: @escaping @Sendable () throws -> Void = {}) {
        result = Parallel.Future { [self] in
            let outcome = Result { try target.rowsTransaction(ledgered: true) { w in
                while let job = next() { try job.run(w) }
                try beforeCommit()
            } }
            close(outcome)
            return outcome
        }
    }

    /// Hands a batch's work to the span's thread.
    func write(_ job: Job) {
        condition.lock()
        if let over {
            condition.unlock()
            job.abandon(over)
            return
        }
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Ends the span once the work handed over is done, and waits: success means it committed.
    func commit() -> Result<Void, Error> {
        condition.lock()
        ending = true
        condition.signal()
        condition.unlock()
        return result.wait()
    }

    private func next() -> Job? {
        condition.lock()
        defer { condition.unlock() }
        while jobs.isEmpty && !ending { condition.wait() }
        return jobs.isEmpty ? nil : jobs.removeFirst()
    }

    /// The transaction ended (committed or rolled back): work still waiting will never run.
    private func close(_ outcome: Result<Void, Error>) {
        condition.lock()
        let error: Error
        if case .failure(let failure) = outcome { error = failure } else { error = CancellationError() }
        over = error
        let left = jobs
        jobs = []
        condition.unlock()
        for job in left { job.abandon(error) }
    }
}
