import BlobStore
import Foundation
import GRDB
import ReceiptCatalog
@testable import ReceiptVault
import TestSupport
import XCTest

/// The ingest path's transactions that span consecutive batches (`IngestSpan`, docs/DESIGN.md "The
/// ingest path"): what a span commits together, what a failure rolls back, and what the caller is
/// told — on a real vault, real files and real SQLite.
final class IngestSpanTests: XCTestCase {
    var folder: TemporaryFolder!
    var vault: Vault!

    override func setUpWithError() throws {
        folder = TemporaryFolder("receipt-span")
        vault = try Vault.create(at: folder.file("vault"), inlineThreshold: 1024).vault
    }

    override func tearDownWithError() throws {
        try vault?.close()
        vault = nil
        folder = nil
    }

    /// 100 small files, 10 a batch, spans of 30 items: batches 1–3, 4–6, 7–9 and 10 commit together.
    let budget = BatchBudget(rowsLimit: 10, spanItemsLimit: 30)

    func files(_ count: Int) throws -> [InputFile] {
        try (0..<count).map { i in
            let path = try folder.write(String(format: "in/%03d.txt", i), TestData.text(200 + i, seed: i))
            return InputFile(path: path, status: try XCTUnwrap(try FileSystem.status(path)))
        }
    }

    func receipts() throws -> Int {
        try vault.catalog.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM receipts") ?? -1 }
    }

    /// The rows of a batch: a receipt per file, through the verbs (as the folder import writes them).
    static func receiptRows(_ w: CatalogWriter, _ batch: [(InputFile, IngestOutcome)]) throws -> Int {
        for case (let input, .ingested(let blob)) in batch {
            let receipt = Receipt(id: ReceiptID.generate(), zone: Zone.personal, createdAt: w.now, modifiedAt: w.now)
            try w.addReceipt(receipt)
            _ = try w.insertAttachment(receiptID: receipt.id, blob: blob.id, size: blob.size, filename: input.name,
                                       mediaType: blob.mediaType, position: 0)
        }
        return batch.count
    }

    func testBatchesOfASpanCommitTogetherAndAreReportedInOrderOnceCommitted() async throws {
        let inputs = try files(100)
        var calls: [(done: Int, visible: Int)] = []
        try vault.locked(.shared) {
            try vault.ingest(inputs, budget: budget, source: { .file($0) }, rows: Self.receiptRows) { rows, done in
                XCTAssertEqual(rows, 10)
                // What another reader sees when the caller hears of a batch: its whole span, committed.
                calls.append((done, try receipts()))
            }
        }
        XCTAssertEqual(calls.map(\.done), Array(stride(from: 10, through: 100, by: 10)))
        XCTAssertEqual(calls.map(\.visible), [30, 30, 30, 60, 60, 60, 90, 90, 90, 100],
                       "each batch is reported once its span committed, and a span commits three batches at once")
        let kept = try vault.catalog.read { try Int.fetchOne($0, sql: "SELECT receipts FROM keptCounts") }
        XCTAssertEqual(kept, 100, "the span's ledger settles the kept counts once for all its batches")
        let report = try await Integrity.fsck(vault.path)
        XCTAssertEqual(report.problems, [])
    }

    func testABatchThatFailsRollsBackItsSpanOnlyAndTheCallerHearsOfWhatCommitted() async throws {
        struct Refused: Error {}
        let inputs = try files(100)
        var reported: [Int] = []
        XCTAssertThrowsError(try vault.locked(.shared) {
            try vault.ingest(inputs, budget: budget, source: { .file($0) }, rows: { w, batch in
                // The fifth batch (items 41–50) fails after writing its rows: the span of batches 4–6 goes.
                if batch.first.map({ $0.0.path.hasSuffix("/040.txt") }) == true {
                    _ = try Self.receiptRows(w, batch)
                    throw Refused()
                }
                return try Self.receiptRows(w, batch)
            }) { _, done in reported.append(done) }
        }) { XCTAssertTrue($0 is Refused, "\($0)") }
        XCTAssertEqual(reported, [10, 20, 30], "only the batches of the span that committed are reported")
        XCTAssertEqual(try receipts(), 30)
        let outbox = try vault.catalog.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM changes") }
        XCTAssertEqual(outbox, 30, "the outbox entries of the span went with its rows (I6)")
        let report = try await Integrity.fsck(vault.path)
        XCTAssertEqual(report.problems, [], "the rolled-back span leaves nothing fsck calls damage")

        // The same files again: what committed is found, the rest is imported.
        var done: [Int] = []
        try vault.locked(.shared) {
            try vault.ingest(inputs, budget: budget, source: { .file($0) }, rows: Self.receiptRows) { _, n in done.append(n) }
        }
        XCTAssertEqual(done.last, 100)
        XCTAssertEqual(try receipts(), 130, "these rows make a receipt per file whatever the vault holds")
    }

    func testACallerThatStopsTheIngestKeepsTheBatchesWrittenBeforeAndSaysSo() throws {
        struct Stop: Error {}
        let inputs = try files(60)
        // The 25th file is gone when its batch (the third) reads it, and the caller's `failed` stops
        // the ingest: the two batches written before end their span there, commit and are reported.
        try FileManager.default.removeItem(atPath: inputs[24].path)
        var reported: [Int] = []
        XCTAssertThrowsError(try vault.locked(.shared) {
            try vault.ingest(inputs, budget: budget, source: { .file($0) }, failed: { _, _ in throw Stop() },
                             rows: Self.receiptRows) { _, done in reported.append(done) }
        }) { XCTAssertTrue($0 is Stop, "\($0)") }
        XCTAssertEqual(reported, [10, 20])
        XCTAssertEqual(try receipts(), 20)
    }

    /// A caller that stops the ingest from its report keeps what committed and hears of nothing more:
    /// the batch written after the last commit is rolled back.
    func testACallerThatStopsWhileReportingKeepsOnlyTheSpansCommittedBefore() throws {
        struct Stop: Error {}
        let inputs = try files(100)
        var reported: [Int] = []
        XCTAssertThrowsError(try vault.locked(.shared) {
            try vault.ingest(inputs, budget: budget, source: { .file($0) }, rows: Self.receiptRows) { _, done in
                reported.append(done)
                if done == 50 { throw Stop() }
            }
        }) { XCTAssertTrue($0 is Stop, "\($0)") }
        XCTAssertEqual(reported, [10, 20, 30, 40, 50])
        XCTAssertEqual(try receipts(), 60, "the two spans that committed, not the batch handed to the third")
        let outbox = try vault.catalog.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM changes") }
        XCTAssertEqual(outbox, 60)
    }

    /// Work handed to a span whose transaction already ended (its batch before failed) never runs:
    /// it is told why, and the span's commit fails with the first batch's error, its rows gone.
    func testWorkHandedToASpanThatEndedIsAbandonedWithTheReason() throws {
        struct Refused: Error {}
        let ran = Parallel.Future<Bool>()
        let abandoned = Parallel.Future<Error>()
        let told = expectation(description: "the job left behind is abandoned")
        let span = IngestSpan(vault.catalog)
        span.write(IngestSpan.Job(run: { w in
            try w.addReceipt(Receipt(id: ReceiptID.generate(), zone: Zone.personal, createdAt: w.now, modifiedAt: w.now))
            throw Refused()
        }, abandon: { XCTFail("the first job was abandoned: \($0)") }))
        // Handed over after the first job failed, or queued behind it: either way it never runs.
        span.write(IngestSpan.Job(run: { _ in ran.put(true) }, abandon: {
            abandoned.put($0)
            told.fulfill()
        }))
        // A generous bound, so that a span that forgot the job fails the test instead of hanging it.
        wait(for: [told], timeout: 60)
        XCTAssertTrue(abandoned.wait() is Refused, "the job left behind hears the error that ended the span")
        guard case .failure(let error) = span.commit() else { return XCTFail("the span committed") }
        XCTAssertTrue(error is Refused, "\(error)")
        // And work handed over once the span is over is abandoned at once, on the caller's thread.
        var late: Error?
        span.write(IngestSpan.Job(run: { _ in ran.put(true) }, abandon: { late = $0 }))
        XCTAssertTrue(late is Refused)
        XCTAssertEqual(try receipts(), 0, "the first job's receipt was rolled back")
        XCTAssertEqual(try vault.stats().receipts, 0)
        ran.put(false)
        XCTAssertEqual(ran.wait(), false, "no abandoned job ran")
    }
}
