import Foundation
import BlobStore
import GRDB
import ReceiptCatalog
import ReceiptText
@testable import ReceiptVault
import TestSupport
import XCTest

/// Indexing through the library with the real tools, and with a tesseract that hangs or crashes on
/// some files (a script the test writes, which runs the real tesseract on the others).
final class TextIndexTests: XCTestCase {
    var folder: TemporaryFolder!
    var vault: Vault!
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures").path

    override func setUpWithError() throws {
        folder = TemporaryFolder("receipt-text")
        vault = try Vault.create(at: folder.file("vault"), inlineThreshold: 1024).vault
    }

    override func tearDownWithError() throws {
        try vault?.close()
        vault = nil
        folder = nil
    }

    func realTools() throws -> ExtractorTools {
        let tools = try ExtractorTools.locate(searchPath: "/usr/bin:/bin")
        XCTAssertNotNil(tools.tesseract, "tesseract is missing: apt-get install tesseract-ocr tesseract-ocr-eng")
        XCTAssertNotNil(tools.pdftotext, "pdftotext is missing: apt-get install poppler-utils")
        return tools
    }

    /// The pharmacy photo with `marker` appended (image readers ignore bytes after the PNG's end):
    /// a different blob with the same picture.
    func photo(_ name: String, marker: String) throws -> String {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Self.fixtures + "/2025/pharmacy.png")))
        bytes += Array(marker.utf8)
        return try folder.write("in/" + name, bytes)
    }

    func testAnExtractorThatHangsOrCrashesIsRecordedAsFailedAndTheRestGoesOn() throws {
        let good = try photo("good.png", marker: "fine")
        let hangs = try photo("hangs.png", marker: "HANG-HERE")
        let crashes = try photo("crashes.png", marker: "CRASH-HERE")
        let report = try vault.importFiles([good, hangs, crashes])
        XCTAssertEqual(report.imported.count, 3)
        var tools = try realTools()
        let real = try XCTUnwrap(tools.tesseract)
        let script = try folder.write("fake-tesseract", """
            #!/bin/sh
            if grep -q HANG-HERE "$1"; then exec sleep 600; fi
            if grep -q CRASH-HERE "$1"; then kill -SEGV $$; fi
            exec \(real) "$@"

            """)
        XCTAssertEqual(chmod(script, 0o755), 0)
        tools.tesseract = script
        tools.limits = ToolLimits(seconds: 3, memoryBytes: 2 << 30)

        let outcome = try vault.indexText(tools: tools)
        XCTAssertEqual(outcome.extracted, 1)
        XCTAssertEqual(outcome.failed, 2)
        XCTAssertEqual(outcome.pending, 0)
        let reasons = outcome.failures.map(\.reason).sorted()
        XCTAssertEqual(reasons.count, 2)
        XCTAssertTrue(reasons[0].hasPrefix("tesseract crashed (signal 11)"), reasons[0])
        XCTAssertEqual(reasons[1], "tesseract timed out after 3 s")
        XCTAssertEqual(try vault.search("amoxicillin").map { $0.receipt.attachments[0].filename }, ["good.png"])

        // Recorded, not retried: a second run has nothing to do.
        let again = try vault.indexText(tools: tools)
        XCTAssertEqual([again.extracted, again.failed, again.pending], [0, 0, 0])
        let failedRows = try vault.catalog.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM blobText WHERE state = 'failed'") }
        XCTAssertEqual(failedRows, 2)
    }

    func testAMissingToolLeavesItsFilesPendingAndNamesThePackage() throws {
        let pdf = Self.fixtures + "/2025/acme-hardware.pdf"
        _ = try vault.importFiles([pdf])
        let none = ExtractorTools(pdftotext: nil, pdftoppm: nil, tesseract: nil, languages: [])
        let outcome = try vault.indexText(tools: none)
        XCTAssertEqual(outcome.missingTools, [.init(tool: "pdftotext", package: "poppler-utils")])
        XCTAssertEqual(outcome.pending, 1)
        XCTAssertEqual(try vault.search("acme").count, 1, "metadata (the file name) is still searched")
        XCTAssertEqual(try vault.search("cordless").count, 0)
        let done = try vault.indexText(tools: try realTools())
        XCTAssertEqual([done.extracted, done.pending], [1, 0])
        XCTAssertEqual(try vault.search("cordless").count, 1, "pdftotext's text of the born-digital PDF")
    }

    /// A file no extractor takes is recorded as without text and its bytes are not read for it: its
    /// blob file, damaged after the import, is not even noticed (a read would refuse it as corrupt,
    /// as it does the PNG's beside it).
    func testAFileNoExtractorTakesIsRecordedWithoutReadingItsBytes() throws {
        let archive = try folder.write("in/backup.bin", TestData.random(64 * 1024, seed: 35))
        let image = try photo("scan.png", marker: "damaged later")
        let imported = try vault.importFiles([archive, image]).imported
        XCTAssertEqual(imported.count, 2)
        for file in imported {
            let path = vault.blobFilePath(BlobID(hex: file.sha256)!)
            let handle = try XCTUnwrap(FileHandle(forWritingAtPath: path))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data("tail".utf8))
            try handle.close()
        }
        let outcome = try vault.indexText(tools: try realTools())
        XCTAssertEqual([outcome.extracted, outcome.failed, outcome.pending], [1, 1, 1], "\(outcome.failures)")
        XCTAssertEqual(outcome.failures.map(\.sha256), [imported[1].sha256], "only the PNG was read")
        XCTAssertEqual(try vault.textCounts().pending, 1, "the damaged PNG waits for fsck --repair; the archive is done")
    }

    func testRebuildExtractsEverythingAgainAndTheOldTextStaysSearchableMeanwhile() throws {
        _ = try vault.importFiles([Self.fixtures + "/2024/city-cab.txt"])
        XCTAssertEqual(try vault.indexText(tools: try realTools()).extracted, 1)
        let word = "Airport"
        XCTAssertEqual(try vault.search(word).count, 1)
        try vault.catalog.transaction { try $0.markTextStale() }
        XCTAssertEqual(try vault.textCounts().pending, 1)
        XCTAssertEqual(try vault.search(word).count, 1)
        XCTAssertEqual(try vault.indexText(rebuild: true, tools: try realTools()).extracted, 1)
        XCTAssertEqual(try vault.textCounts().pending, 0)
    }

    func testFsckFindsADamagedSearchIndexAndRepairRebuildsIt() async throws {
        _ = try vault.importFiles([Self.fixtures + "/2024/city-cab.txt"])
        _ = try vault.indexText(tools: try realTools())
        XCTAssertEqual(try vault.search("airport").count, 1)
        try vault.catalog.write { try $0.execute(sql: "DELETE FROM receiptSearch") }
        XCTAssertEqual(try vault.search("airport").count, 0)
        let path = vault.path
        try vault.close()
        vault = nil
        let check = try await Vault.fsck(at: path, options: FsckOptions(quick: true))
        XCTAssertFalse(check.ok)
        XCTAssertTrue(check.problems.contains { $0.kind == .catalog && $0.detail.contains("missing from the search index") },
                      "\(check.problems)")
        let repaired = try await Vault.fsck(at: path, options: FsckOptions(quick: true, repair: true))
        XCTAssertTrue(repaired.ok, "\(repaired.problems)")
        vault = try Vault.open(at: path)
        XCTAssertEqual(try vault.search("airport").count, 1)
        let after = try await Vault.fsck(at: path, options: FsckOptions(quick: true))
        XCTAssertTrue(after.ok, "\(after.problems)")
    }

    func testExactSums() {
        var sum = ExactSum()
        for amount in ["0.10", "0.20"] { XCTAssertTrue(sum.add(amount)) }
        XCTAssertEqual(sum.text, "0.30")
        var big = ExactSum()
        for _ in 0..<10 { big.add("999999999999999.9999") }
        XCTAssertEqual(big.text, "9999999999999999.9990")
        var mixed = ExactSum()
        for amount in ["1", "2.5", "-0.125"] { mixed.add(amount) }
        XCTAssertEqual(mixed.text, "3.375")
        XCTAssertFalse(mixed.add("abc"))
    }

    func testSearchQueries() throws {
        XCTAssertEqual(try SearchQuery("phar* \"city tax\" 23.45").match(), "\"phar\"* \"city tax\" \"23.45\"")
        XCTAssertEqual(try SearchQuery("23.45").terms[0].amount, "23.45")
        XCTAssertEqual(SearchQuery.totals(equalTo: "23.4"), ["23.4", "23.40", "23.400", "23.4000"])
        XCTAssertEqual(SearchQuery.totals(equalTo: "23"), ["23", "23.0", "23.00", "23.000", "23.0000"])
        XCTAssertEqual(try SearchQuery("say \"\"hi\"\" AND OR").match(), "\"say\" \"hi\" \"AND\" \"OR\"")
        XCTAssertThrowsError(try SearchQuery(" ** \"\" - "))
    }
}
