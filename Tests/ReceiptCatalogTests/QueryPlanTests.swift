import Foundation
import GRDB
@testable import ReceiptCatalog
import TestSupport
import XCTest

/// Queries a command runs on every use read an index, not a table that grows with the vault: SQLite's
/// own plan for them on a real catalog.
final class QueryPlanTests: XCTestCase {
    /// The plan's lines (`EXPLAIN QUERY PLAN`) for `sql`, with NULL for each of its parameters.
    func plan(_ sql: String, parameters: Int) throws -> [String] {
        let folder = TemporaryFolder("receipt-plan")
        let path = folder.file(Catalog.fileName)
        let catalog = try Catalog.create(at: path, settings: VaultSettings(vaultID: "test"))
        defer { try? catalog.close() }
        return try catalog.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql,
                             arguments: StatementArguments(Array(repeating: DatabaseValue.null, count: parameters)))
                .map { $0["detail"] as String }
        }
    }

    /// Each sync asks which texts were stored since its last offer: with the whole text table read
    /// for it, a one-edit sync at 100,000 receipts spent 60 % of its time there.
    func testTheSyncsTextOfferReadsOnlyItsIndex() throws {
        let plan = try plan(Catalog.textsStoredSQL, parameters: 5)
        XCTAssertTrue(plan.contains { $0.contains("COVERING INDEX blobText_by_extractedAt") }, "\(plan)")
        XCTAssertFalse(plan.contains { $0.contains("TEMP B-TREE") }, "no sort: \(plan)")
    }

    /// `list` asks a chunk's files by the receipts' row numbers, `show`, `search` and a sync by ids:
    /// each is a search of the attachments' key (receipt row first: a receipt's files together),
    /// never a scan of the table (catalog v8, `ReceiptRows`).
    func testFilesAreLookedUpByTheAttachmentsKey() throws {
        for sql in [Catalog.filesSQL(receipt: "a.receiptRow", join: "", where: Catalog.byRows(3)),
                    Catalog.filesSQL(receipt: "r.id", join: "JOIN receipts r ON r.rowNumber = a.receiptRow", where: Catalog.byIDs(3))] {
            let plan = try plan(sql, parameters: 3)
            XCTAssertTrue(plan.contains { $0.contains("SEARCH a USING PRIMARY KEY (receiptRow=?)") }, "\(plan)")
            XCTAssertFalse(plan.contains { $0.hasPrefix("SCAN a") }, "\(plan)")
        }
        // A receipt's search document is made from its files by the same key, in key order, each
        // file's text looked up by its address: the same order whether the document is indexed or
        // made again to be removed (less a row just inserted) or checked (SearchIndex).
        for leaving in [SearchIndex.Leaving.nothing, .attachment("?"), .text("?")] {
            let sql = SearchIndex.documents(where: "r.rowNumber BETWEEN ? AND ?", leaving: leaving)
            let document = try plan(sql, parameters: sql.filter { $0 == "?" }.count)
            XCTAssertEqual(document.filter { $0.contains("SEARCH a USING PRIMARY KEY (receiptRow=?)") }.count, 2, "\(document)")
            XCTAssertTrue(document.contains { $0.contains("SEARCH t USING PRIMARY KEY (sha256=?)") }, "\(document)")
            XCTAssertFalse(document.contains { $0.hasPrefix("SCAN a") || $0.contains("TEMP B-TREE") }, "\(document)")
        }
    }

    /// `dups` and an import's look-up of a re-scan read the band indexes on the signatures (catalog
    /// v15): a scan of one index per band in key order, each key's receipts searched; never a sort
    /// or a scan of the signatures' table.
    func testDuplicatesMeetThroughTheBandIndexes() throws {
        for band in [0, Catalog.signatureBands - 1] {
            let plan = try plan(Catalog.sharedBandSQL(band), parameters: 1)
            XCTAssertTrue(plan.contains("SCAN textSignatures USING INDEX textSignatures_band\(band)"), "\(plan)")
            XCTAssertTrue(plan.contains("SEARCH s USING INDEX textSignatures_band\(band) (<expr>=?)"), "\(plan)")
        }
        let neighbours = try plan(Catalog.bandNeighboursSQL, parameters: 1)
        for band in 0..<Catalog.signatureBands {
            XCTAssertTrue(neighbours.contains("SEARCH o USING INDEX textSignatures_band\(band) (<expr>=?)"), "\(neighbours)")
        }
        XCTAssertFalse(neighbours.contains { $0.hasPrefix("SCAN o") || $0.hasPrefix("SCAN m") }, "\(neighbours)")
        // A dated receipt's neighbours are sought by its zone and day, not through its bands.
        let sameDay = try plan(Catalog.sameDayNeighboursSQL, parameters: 1)
        XCTAssertEqual(sameDay.filter { $0.hasPrefix("SEARCH q USING INDEX receipts_by_zone_date (zone=? AND date=?)") }.count, 2, "\(sameDay)")
        XCTAssertFalse(sameDay.contains { $0.hasPrefix("SCAN") }, "\(sameDay)")
    }
}
