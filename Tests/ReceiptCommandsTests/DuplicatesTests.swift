import Foundation
import XCTest

/// Re-scans and duplicates, by the real binary and the real Tesseract on Fixtures/read: a re-scan is
/// flagged at import and by `dups`, two purchases of one shop, day and amount are not, nothing is removed.
final class DuplicatesTests: CLITestCase {
    func importJSON(_ name: String, _ meta: String...) throws -> [String: Any] {
        let out = try XCTUnwrap(try json(["import", ReadingTests.read + "/" + name] + meta) as? [String: Any])
        return try XCTUnwrap((out["imported"] as? [[String: Any]])?.first)
    }

    func dups(_ args: String...) throws -> [[String: Any]] {
        try XCTUnwrap(try json(["dups"] + args) as? [[String: Any]])
    }

    func testARescanIsFlaggedAtImportAndByDupsAndNothingIsRemoved() throws {
        let first = try XCTUnwrap(try importJSON("us-pharmacy.png")["id"] as? String)
        XCTAssertNil(try importJSON("eu-cafe.jpg")["possibleDuplicateOf"], "another shop's receipt is no duplicate")
        let rescan = try importJSON("us-pharmacy-rescan.jpg")
        let second = try XCTUnwrap(rescan["id"] as? String)
        XCTAssertEqual(rescan["possibleDuplicateOf"] as? [String], [first])
        let groups = try dups()
        XCTAssertEqual(groups.count, 1, "\(groups)")
        XCTAssertEqual(groups.first?["receipts"] as? [String], [first, second])
        XCTAssertEqual(groups.first?["reason"] as? String, "same-text")
        XCTAssertEqual(try list().count, 3)
        let human = try receipt("dups")
        XCTAssertEqual(human.status, 0)
        XCTAssertTrue(human.stdout.contains("same-text") && human.stdout.contains(String(second.prefix(8))), human.stdout)
    }

    func testTwoPurchasesOfOneShopDayAndAmountAreNotFlagged() throws {
        let a = try importJSON("corner-shop-a.png", "--merchant", "Corner Shop")
        let b = try importJSON("corner-shop-b.png", "--merchant", "corner shop")
        XCTAssertNil(b["possibleDuplicateOf"])
        let shown = try [a, b].map { try XCTUnwrap(try json("show", $0["id"] as! String) as? [String: Any]) }
        XCTAssertEqual(shown.map { $0["total"] as? String }, ["4.50", "4.50"], "both totals read: the fields are equal")
        XCTAssertEqual(shown.map { $0["date"] as? String }, ["2025-05-02", "2025-05-02"])
        XCTAssertEqual(try dups().count, 0, "their texts differ: two purchases")
    }

    func testEqualFieldsWithoutTextAreFlaggedUntilKeptApart() throws {
        let meta = ["--merchant", "Corner Shop", "--date", "2025-05-02", "--total", "4.50", "--no-index"]
        let a = try XCTUnwrap(try json(["import", ReadingTests.read + "/corner-shop-a.png"] + meta) as? [String: Any])
        let first = try XCTUnwrap((a["imported"] as? [[String: Any]])?.first?["id"] as? String)
        let human = try receipt(["import", ReadingTests.read + "/eu-cafe.jpg"] + meta)
        XCTAssertEqual(human.status, 0, human.stderr)
        XCTAssertTrue(human.stdout.contains("may duplicate \(first.prefix(8))"), human.stdout)
        let groups = try dups()
        XCTAssertEqual(groups.first?["reason"] as? String, "same-fields")
        let ids = try XCTUnwrap(groups.first?["receipts"] as? [String])
        XCTAssertEqual(ids.count, 2)
        XCTAssertEqual(try receipt(["dups", "keep"] + ids).status, 0)
        XCTAssertEqual(try dups().count, 0, "kept apart")
        XCTAssertEqual(try list().count, 2)
    }

    func testBadDupsInputChangesNothing() throws {
        let id = try XCTUnwrap(try importJSON("corner-shop-a.png")["id"] as? String)
        let before = try state()
        for (args, message) in [(["dups", "--zone", "nosuch"], "nosuch"), (["dups", "keep", id], "at least two"),
                                (["dups", "keep", id, "00000000"], "no receipt 00000000")] {
            let r = try receipt(args)
            XCTAssertNotEqual(r.status, 0, "\(args)")
            XCTAssertTrue(r.stderr.contains(message), r.stderr)
            XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, r.stderr)
        }
        XCTAssertEqual(try state(), before)
    }
}

/// A re-scan brought in by a manifest or by `watch` is flagged as `import` flags it (CONTRACT: `import`
/// reports a new receipt that joins a dups group), in JSON and in the human output.
final class DuplicatesOnEveryImportTests: CLITestCase {
    /// A folder holding only the re-scan of us-pharmacy.png, under `name`.
    func rescan(named name: String) throws -> String {
        let dir = folder.file("in-" + name)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: ReadingTests.read + "/us-pharmacy-rescan.jpg", toPath: dir + "/" + name)
        return dir
    }

    /// A manifest naming the re-scan (beside it in its own folder).
    func manifest(named name: String) throws -> String {
        let dir = try rescan(named: name)
        try Data("path\n\(name)\n".utf8).write(to: URL(fileURLWithPath: dir + "/manifest.csv"))
        return dir + "/manifest.csv"
    }

    func importOriginal() throws -> String {
        let out = try XCTUnwrap(try json("import", ReadingTests.read + "/us-pharmacy.png") as? [String: Any])
        return try XCTUnwrap((out["imported"] as? [[String: Any]])?.first?["id"] as? String)
    }

    func testAManifestImportFlagsARescan() throws {
        let first = try importOriginal()
        let out = try XCTUnwrap(try json("import", "--manifest", try manifest(named: "a.jpg")) as? [String: Any])
        let row = try XCTUnwrap((out["imported"] as? [[String: Any]])?.first)
        XCTAssertEqual(row["possibleDuplicateOf"] as? [String], [first], "\(out)")
    }

    func testAManifestImportSaysARescanMayDuplicate() throws {
        let first = try importOriginal()
        let human = try receipt("import", "--manifest", try manifest(named: "a.jpg"))
        XCTAssertEqual(human.status, 0, human.stderr)
        XCTAssertTrue(human.stdout.contains("may duplicate \(first.prefix(8))"), human.stdout)
    }

    func testWatchFlagsARescanInItsJSON() throws {
        let first = try importOriginal()
        let out = try XCTUnwrap(try json("watch", try rescan(named: "a.jpg"), "--once", "--settle", "0") as? [String: Any])
        let row = try XCTUnwrap((out["imported"] as? [[String: Any]])?.first)
        XCTAssertEqual(row["possibleDuplicateOf"] as? [String], [first], "\(out)")
    }

    func testWatchSaysARescanMayDuplicate() throws {
        let first = try importOriginal()
        let human = try receipt("watch", try rescan(named: "a.jpg"), "--once", "--settle", "0")
        XCTAssertEqual(human.status, 0, human.stderr)
        XCTAssertTrue(human.stdout.contains("may duplicate \(first.prefix(8))"), human.stdout)
    }
}
