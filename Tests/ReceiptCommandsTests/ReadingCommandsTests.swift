import Foundation
import TestSupport
import XCTest

/// Commands that only read open the catalog as one reading connection (`Catalog.Access.reading`):
/// they change no byte of it and leave no WAL file behind. A pool's writer wrote a dummy
/// transaction into a fresh WAL on every open (GRDB makes sure a non-empty WAL exists), which the
/// close then checkpointed into the catalog: four fsyncs for a search.
final class ReadingCommandsTests: CLITestCase {
    func testSearchListStatsShowAndReportChangeNoByteOfTheCatalog() throws {
        let path = try folder.write("in/bill.txt", "Corner Bakery\n2 x croissant 4.80\n")
        let imported = try receipt("import", path, "--merchant", "Corner Bakery", "--date", "2025-02-01",
                                   "--total", "4.80", "--currency", "EUR", "--json")
        XCTAssertEqual(imported.status, 0, imported.stderr)
        let id = try XCTUnwrap(try list().first?["id"] as? String)
        let catalog = vault + "/catalog.sqlite"
        XCTAssertFalse(FileManager.default.fileExists(atPath: catalog + "-wal"), "the import's close removes its WAL")
        let before = try Data(contentsOf: URL(fileURLWithPath: catalog))
        for args in [["search", "croissant"], ["list"], ["list", "--from", "2025-01-01", "--to", "2025-12-31"],
                     ["stats"], ["show", id], ["report", "--by", "merchant"]] {
            let r = try receipt(args)
            XCTAssertEqual(r.status, 0, "\(args): \(r.stderr)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: catalog + "-wal"), "\(args) left a WAL file")
            XCTAssertFalse(FileManager.default.fileExists(atPath: catalog + "-shm"), "\(args) left a shared-memory file")
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: catalog)), before, "\(args) changed the catalog")
        }
        XCTAssertTrue(try receipt("search", "croissant").stdout.contains("Corner Bakery"))
    }
}
