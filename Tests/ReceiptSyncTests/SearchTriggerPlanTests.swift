import Foundation
import GRDB
@testable import ReceiptServer
import TestSupport
import XCTest

/// The web search document of a record is written by triggers when a text or a blob reference
/// arrives: they must read the record's own blobs' texts by key, not every text of the zone's owner
/// (which made a first sync of 10,000 receipts 3.5x as long, docs/BENCHMARKS.md).
final class SearchTriggerPlanTests: XCTestCase {
    func testADocumentsTextsAreReadByTheRecordsBlobs() async throws {
        let folder = TemporaryFolder("receipt-search-trigger-plan")
        let catalog = try ServerCatalog(dataPath: folder.file("server"))
        let (plan, triggers) = try await catalog.pool.read { db in
            let sql = "SELECT w.docID, \(ServerCatalog.ownerTexts(zone: "w.zoneID", id: "w.id")) FROM webRows w WHERE w.zoneID = 1 AND w.id = 'x'"
            let plan = try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql).map { $0["detail"] as String }
            let triggers = try ServerCatalog.searchTriggerNames.compactMap { name in
                try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", arguments: [name])
            }
            return (plan, triggers)
        }
        try catalog.close()
        XCTAssertTrue(plan.contains("SEARCH ob USING PRIMARY KEY (zoneID=? AND recordID=?)"), "\(plan)")
        XCTAssertTrue(plan.contains("SEARCH ot USING PRIMARY KEY (ownerID=? AND sha256=?)"), "\(plan)")
        XCTAssertEqual(triggers.count, 5)
        for trigger in triggers {
            XCTAssertTrue(trigger.contains("recordBlobs ob CROSS JOIN zones oz CROSS JOIN blobTexts ot"), trigger)
        }
    }
}
