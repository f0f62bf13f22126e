import Foundation
import GRDB
import ReceiptCatalog
import ReceiptText
@testable import ReceiptVault
import TestSupport
import XCTest

/// `stats` reads counts the catalog keeps by triggers (KeptCounts.swift): after every kind of change
/// they must equal a recount, an older catalog migrates with exact counts, and fsck finds and
/// `--repair` fixes counts that drifted.
final class KeptStatsTests: XCTestCase {
    var folder: TemporaryFolder!
    var vault: Vault!

    override func setUpWithError() throws {
        folder = TemporaryFolder("receipt-stats")
        vault = try Vault.create(at: folder.file("vault"), inlineThreshold: 1024, compression: .none).vault
    }

    override func tearDownWithError() throws {
        try vault?.close()
        vault = nil
        folder = nil
    }

    /// The stats as a scan of the catalog finds them (what `stats` computed before counts were kept).
    func recounted() throws -> VaultStats {
        try vault.catalog.read { db in
            let row = try XCTUnwrap(try Row.fetchOne(db, sql: """
                SELECT (SELECT count(*) FROM receipts), (SELECT count(*) FROM attachments), count(*),
                       coalesce(sum(inline IS NULL), 0), coalesce(sum(inline IS NOT NULL), 0),
                       coalesce(sum(size), 0), coalesce(sum(storedSize), 0),
                       (SELECT count(DISTINCT a.sha256) FROM attachments a),
                       (SELECT count(*) FROM blobText t WHERE t.extractor = ?
                          AND EXISTS (SELECT 1 FROM attachments a WHERE a.sha256 = t.sha256))
                FROM blobs
                """, arguments: [TextExtractor.version]))
            let referenced: Int = row[7], indexed: Int = row[8]
            return VaultStats(receipts: row[0], attachments: row[1], blobs: row[2], externalBlobs: row[3],
                              inlineBlobs: row[4], logicalBytes: row[5], storedBytes: row[6],
                              indexedBlobs: indexed, pendingIndex: referenced - indexed)
        }
    }

    func assertExact(_ step: String, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(try vault.stats(), try recounted(), step, file: file, line: line)
        XCTAssertEqual(try vault.catalog.keptCountProblems(), [], step, file: file, line: line)
        // FTS5's integrity-check reads each receipt's document from the stored text and compares it with
        // the index (SearchIndex). The bulk writers index what they wrote at the end of their
        // transaction (Catalog+Ledger.swift), not by the row triggers.
        XCTAssertEqual(try vault.catalog.searchIndexProblems(), [], step, file: file, line: line)
    }

    func testStatsStayExactThroughImportAttachEditIndexRemoveAndGC() throws {
        let cafe = "Corner Cafe\nflat white 3.40\n"
        let small = try folder.write("in/small.txt", cafe)
        let same = try folder.write("in/same.txt", "Corner Cafe\nflat white 3.40\n")
        let large = try folder.write("in/large.bin", TestData.random(5000, seed: 7))
        let other = try folder.write("in/other.txt", "Hardware Store\nhammer 12.00\n")
        let imported = try vault.importFiles([small, same, large]).imported
        XCTAssertEqual(imported.count, 3)
        try assertExact("after import")
        let s = try vault.stats()
        XCTAssertEqual([s.receipts, s.attachments, s.blobs, s.externalBlobs, s.inlineBlobs], [3, 3, 2, 1, 1],
                       "two receipts share the small text: one blob")
        XCTAssertEqual(s.logicalBytes, Int64(cafe.utf8.count + 5000))
        XCTAssertEqual(s.pendingIndex, 2)

        let manifest = try folder.write("in/manifest.csv", "path,merchant,date,total,currency\nother.txt,Hardware,2025-03-04,12.00,USD\nlarge.bin,Again,2025-03-05,1.00,USD\n")
        XCTAssertEqual(try vault.importManifest(manifest).imported.count, 2)
        try assertExact("after a manifest import")
        _ = try folder.write("in/extra-invoice.txt", "Hardware Store\nhammer 12.00\n")  // a blob the vault holds
        let more = try folder.write("in/more.csv", "path,id,merchant\nextra-invoice.txt,\(imported[2].id),Bigger Store\nother.txt,,Hardware\n")
        XCTAssertEqual(try vault.importManifest(more).imported.map(\.existing), [false, true])
        try assertExact("after a manifest import that adds a file to a receipt and changes its merchant")
        XCTAssertEqual(try vault.search("extra invoice").map(\.receipt.id), [imported[2].id.text])
        XCTAssertEqual(try vault.search("bigger").map(\.receipt.id), [imported[2].id.text])
        _ = try vault.attach(imported[0].id.text, paths: [other])
        try assertExact("after attach")
        _ = try vault.edit(imported[1].id.text, ReceiptMetadata(merchant: "Edited"))
        try assertExact("after edit")

        let tools = ExtractorTools(pdftotext: nil, pdftoppm: nil, tesseract: nil, languages: [])
        _ = try vault.indexText(tools: tools)
        try assertExact("after index (the texts are read, the binary fails or waits)")
        XCTAssertEqual(try vault.stats().pendingIndex, try recounted().pendingIndex)
        XCTAssertGreaterThan(try vault.stats().indexedBlobs, 0)

        _ = try vault.detach(imported[0].id.text, blob: TestData.sha256(Array("Hardware Store\nhammer 12.00\n".utf8)))
        try assertExact("after detach (the manifest's receipt still holds the blob)")
        _ = try vault.remove(try vault.list().map(\.id).filter { $0 != imported[0].id.text })
        try assertExact("after rm: blobs stay until gc")
        XCTAssertEqual(try vault.stats().receipts, 1)
        XCTAssertEqual(try vault.stats().blobs, 3)
        // Imported again before gc: blobs the vault holds that no attachment names, with their texts
        // (an import batch keeps its books itself, Catalog+Ledger.swift: both are counted again).
        let triggers = try triggerNames()
        let again = try vault.importFiles([other, large]).imported
        XCTAssertEqual(again.map(\.existing), [false, false])
        try assertExact("after importing unreferenced blobs with texts again")
        XCTAssertEqual(try vault.stats().blobs, 3)
        XCTAssertEqual(try triggerNames(), triggers, "the import's transaction put every trigger back")
        XCTAssertEqual(try vault.search("hammer").map(\.receipt.id), [again[0].id.text], "indexed at once")
        _ = try vault.remove(again.map(\.id.text))
        try assertExact("after rm of those")
        _ = try vault.collectGarbage(graceSeconds: 0)
        try assertExact("after gc")
        let end = try vault.stats()
        XCTAssertEqual([end.receipts, end.attachments, end.blobs], [1, 1, 1])

        try vault.catalog.transaction { try $0.markTextStale() }
        try assertExact("after index --rebuild marks every text stale")
        XCTAssertEqual(try vault.stats().pendingIndex, 1)
    }

    func triggerNames() throws -> [String] {
        try vault.catalog.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name")
        }
    }

    /// A ledgered transaction suspends the row triggers, so a verb that deletes or replaces rows
    /// (which its ledger does not account for) is refused, and the rollback restores the triggers.
    func testALedgeredTransactionRefusesVerbsThatDeleteRows() throws {
        let id = try vault.importFiles([try folder.write("in/a.txt", "Corner Cafe\n")]).imported[0].id
        let triggers = try triggerNames()
        XCTAssertGreaterThan(triggers.count, 10)
        XCTAssertThrowsError(try vault.catalog.rowsTransaction(ledgered: true) { w in try w.removeReceipt(id, zone: Zone.personal) }) {
            XCTAssertTrue("\($0)".contains("deleteReceipt cannot run in a ledgered transaction"), "\($0)")
        }
        XCTAssertEqual(try triggerNames(), triggers)
        XCTAssertEqual(try vault.list().map(\.id), [id.text])
        try assertExact("after the refused transaction")
    }

    func testAnOlderCatalogMigratesInPlaceWithExactCounts() throws {
        _ = try vault.importFiles([try folder.write("in/a.txt", "a receipt"), try folder.write("in/b.bin", TestData.random(4000, seed: 2))])
        let expected = try vault.stats()
        let path = vault.path
        try vault.close()
        vault = nil
        // The catalog as the binary before kept counts wrote it: version 4, no tables, no triggers.
        let queue = try DatabaseQueue(path: path + "/" + Catalog.fileName)
        try queue.writeWithoutTransaction { db in
            for name in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'kept_%'") {
                try db.execute(sql: "DROP TRIGGER \(name)")
            }
            try db.execute(sql: "DROP TABLE keptCounts; DROP TABLE keptTextCounts")
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v5-kept-counts'")
            try db.execute(sql: "PRAGMA user_version = 4")
        }
        try queue.close()
        vault = try Vault.open(at: path)
        XCTAssertEqual(try vault.stats(), expected)
        try assertExact("after the migration")
        _ = try vault.importFiles([try folder.write("in/c.txt", "one more")])
        try assertExact("the migrated catalog keeps them")
    }

    func testFsckReportsCountsThatDriftedAndRepairRecountsThem() async throws {
        _ = try vault.importFiles([try folder.write("in/a.txt", "a receipt")])
        try vault.catalog.write { try $0.execute(sql: "UPDATE keptCounts SET receipts = receipts + 5, storedBytes = 1") }
        let path = vault.path
        try vault.close()
        vault = nil
        let check = try await Vault.fsck(at: path, options: FsckOptions(quick: true))
        XCTAssertFalse(check.ok)
        let problem = try XCTUnwrap(check.problems.first { $0.kind == .catalog && $0.detail.contains("receipt stats") },
                                    "\(check.problems)")
        XCTAssertTrue(problem.detail.contains("receipts: kept 6, counted 1"), problem.detail)
        let repaired = try await Vault.fsck(at: path, options: FsckOptions(quick: true, repair: true))
        XCTAssertTrue(repaired.ok, "\(repaired.problems)")
        XCTAssertTrue(repaired.problems.contains { $0.repaired && $0.detail.hasSuffix("recounted") }, "\(repaired.problems)")
        vault = try Vault.open(at: path)
        try assertExact("after fsck --repair")
        XCTAssertEqual(try vault.stats().receipts, 1)
        let after = try await Vault.fsck(at: path)
        XCTAssertTrue(after.ok, "\(after.problems)")
    }
}
