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
            let receipt = Receipt(id: ReceiptID.generateText(), zone: Zone.personal, createdAt: w.now, modifiedAt: w.now)
            try w.insertReceipt(receipt)
            _ = try w.insertAttachment(receiptID: receipt.id, blob: blob.id, size: blob.size, filename: input.name,
                                       mediaType: blob.mediaType, position: 0)
            try w.recordChange(receipt.id, zone: receipt.zone, .upsert)
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
}
