import BlobStore
import Foundation
import ReceiptText
@testable import ReceiptVault
import TestSupport
import XCTest

/// `fsck --quick` reads every page of the tables that hold what users gave (receipts, attachments,
/// blobs, their indexes, the outbox, zones, settings, the schema) and leaves the derived ones
/// (extracted text, the search index's tables, the texts' signatures) to the full check, which reads every page.
final class FsckQuickTests: XCTestCase {
    func testQuickFindsAPageDamagedInEveryTableUsersDataLivesIn() async throws {
        // Indexes too: --quick's reads of rows seldom go through them, so only the page check sees them.
        for object in ["receipts", "receipts_by_date", "attachments", "attachments_by_blob", "blobs", "sqlite_autoindex_blobs_1",
                       "changes", "changes_by_receipt", "zones", "settings"] {
            let dir = TemporaryFolder("receipt-fsck-quick")
            let path = try Self.damagedVault(in: dir, object)
            let quick = try await Integrity.fsck(path, quick: true)
            XCTAssertEqual(quick.problems.map(\.kind), [.catalog], "\(object): \(quick.problems)")
            let full = try await Integrity.fsck(path)
            XCTAssertEqual(full.problems.map(\.kind), [.catalog], "\(object): \(full.problems)")
        }
    }

    func testTheDerivedTablesArePageCheckedByTheFullCheckOnly() async throws {
        for object in ["blobText", "receiptSearch_data", "textSignatures_band0"] {
            let dir = TemporaryFolder("receipt-fsck-quick")
            let path = try Self.damagedVault(in: dir, object)
            let full = try await Integrity.fsck(path)
            XCTAssertEqual(full.problems.map(\.kind), [.catalog], "\(object): \(full.problems)")
            let quick = try await Integrity.fsck(path, quick: true)
            XCTAssertEqual(quick.problems, [], object)
        }
    }

    /// The search index's row counts read its `docsize` table, which --quick does not page-check:
    /// the damage they meet is a problem reported (exit 1) and repaired, not an error (exit 2).
    func testDamageMetWhileReadingRowsIsAProblemReportedAndRepaired() async throws {
        let dir = TemporaryFolder("receipt-fsck-quick")
        let path = try Self.damagedVault(in: dir, "receiptSearch_docsize")
        let quick = try await Integrity.fsck(path, quick: true)
        XCTAssertEqual(quick.problems.map(\.kind), [.catalog], "\(quick.problems)")
        let cli = try ReceiptBinary.run(["--vault", path, "fsck", "--quick"])
        XCTAssertEqual(cli.status, 1, cli.stdout + cli.stderr)
        XCTAssertTrue(cli.stdout.contains("is damaged") && cli.stdout.contains("receipt fsck --repair"), cli.stdout)
        let repaired = try await Integrity.fsck(path, repair: true)
        XCTAssertTrue(repaired.ok, "\(repaired.problems)")
        let clean = try await Integrity.fsck(path)
        XCTAssertEqual(clean.problems, [])
        // --quick says it re-hashed nothing; the full check says what it re-hashed.
        let quickCLI = try ReceiptBinary.run(["--vault", path, "fsck", "--quick"])
        XCTAssertEqual(quickCLI.status, 0, quickCLI.stdout + quickCLI.stderr)
        XCTAssertTrue(quickCLI.stderr.contains("checked by size only (--quick)") && !quickCLI.stderr.contains("re-hashed"), quickCLI.stderr)
        let fullCLI = try ReceiptBinary.run(["--vault", path, "fsck"])
        XCTAssertTrue(fullCLI.stderr.contains("re-hashed in"), fullCLI.stderr)
    }

    /// A vault of a few receipts with their text extracted, then the first page of `object` (a
    /// table's or an index's root) overwritten with garbage.
    static func damagedVault(in dir: TemporaryFolder, _ object: String) throws -> String {
        let (vault, _) = try Integrity.vault(in: dir, external: 1, inline: 3)
        let tools = try ExtractorTools.locate(searchPath: "/usr/bin:/bin")
        XCTAssertEqual(try vault.indexText(tools: tools).extracted, 4, "three texts and one file with none")
        try vault.close()
        let path = dir.file("vault")
        try FsckTests.checkpoint(path)
        let (root, pageSize) = try FsckTests.rootPage(path, of: object)
        XCTAssertGreaterThan(root, 1, object)
        try FsckTests.overwrite(path + "/catalog.sqlite", at: (root - 1) * pageSize, with: [UInt8](repeating: 0xEE, count: pageSize))
        return path
    }
}
