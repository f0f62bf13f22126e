import Foundation
import GRDB
import ReceiptCatalog
import ReceiptText
@testable import ReceiptVault
import TestSupport
import XCTest

/// A vault whose texts were read before signatures were kept (catalog v9): `dups` signs them first,
/// a batch at a time, and finds the re-scan (real Tesseract, real SQLite).
final class DuplicateSignatureTests: XCTestCase {
    static let read = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/read").path

    func testTextsReadBeforeSignaturesAreSignedByDups() throws {
        let folder = TemporaryFolder("receipt-dups")
        let vault = try Vault.create(at: folder.file("vault"), inlineThreshold: 1024).vault
        defer { try? vault.close() }
        let report = try vault.importFiles([Self.read + "/us-pharmacy.png", Self.read + "/us-pharmacy-rescan.jpg"],
                                           zone: Zone.personal, metadata: ReceiptMetadata())
        XCTAssertEqual(report.imported.count, 2)
        _ = try vault.indexText(tools: try ExtractorTools.locate(searchPath: "/usr/bin:/bin"))
        // What a v9 catalog holds after its texts were read: no signature.
        try vault.catalog.write { db in try db.execute(sql: "DELETE FROM textSignatures") }
        XCTAssertEqual(try vault.catalog.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM textBands") }, 0)
        let groups = try vault.duplicateGroups()
        XCTAssertEqual(groups, [DuplicateGroup(receipts: report.imported.map(\.id), reason: "same-text")])
        XCTAssertEqual(try vault.catalog.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM textSignatures") }, 2)
    }
}
