import Foundation
import FoundationXML
import TestSupport
import XCTest

/// `index`, `search`, `report` and the claim fields through the real binary and the real tools.
final class SearchTests: CLITestCase {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures").path

    func search(_ args: String...) throws -> [[String: Any]] {
        try XCTUnwrap(try json(["search"] + args) as? [[String: Any]])
    }

    func merchants(_ results: [[String: Any]]) -> [String] { results.map { $0["merchant"] as? String ?? "-" } }

    func testTheFixturesAreFoundByWordsOnlyOCROrPdftotextCouldRead() throws {
        let r = try receipt("import", "--manifest", Self.fixtures + "/manifest.csv")
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("indexed the text of 7 file(s)"), r.stderr)
        // A scanned PDF (no text layer): OCR of its rendered pages.
        let breakfast = try search("breakfast")
        XCTAssertEqual(merchants(breakfast), ["Hotel Seaside"])
        let matches = try XCTUnwrap(breakfast.first?["matches"] as? [[String: Any]])
        XCTAssertEqual(matches.count, 1)
        XCTAssertTrue((matches[0]["snippet"] as? String ?? "").contains("[Breakfast]"), "\(matches)")
        XCTAssertNotNil(breakfast.first?["score"] as? Double)
        // A photo: OCR.
        XCTAssertEqual(merchants(try search("croissant")), ["Corner Bakery"])
        // A born-digital PDF: pdftotext.
        XCTAssertEqual(merchants(try search("wall", "anchors")), ["Acme Hardware, Inc."])
        // The warranty card's photo says "cordless drill" too; the invoice's merchant weighs more... both are found.
        XCTAssertEqual(Set(merchants(try search("cordless", "drill"))), ["Acme Hardware, Inc.", "Acme Hardware"])
        let stats = try XCTUnwrap(try json("stats") as? [String: Any])
        XCTAssertEqual(stats["indexedBlobs"] as? Int, 7)
        XCTAssertEqual(stats["pendingIndex"] as? Int, 0)
    }

    func testDiacriticsPrefixesPhrasesAmountsAndFilters() throws {
        let cafe = try importFile("bill.txt", Array("Café de Flore\n2 x crème brûlée 9.80\nThank you\n".utf8),
                                  "--merchant", "Café de Flore", "--total", "23.45", "--currency", "EUR",
                                  "--date", "2025-02-01", "--category", "food")
        try importFile("other.txt", Array("Hardware store, nails and screws 23.45 paid\n".utf8),
                       "--merchant", "Nails R Us", "--date", "2025-03-01", "--category", "home")
        XCTAssertEqual(merchants(try search("cafe")), ["Café de Flore"])
        XCTAssertEqual(merchants(try search("CREME", "brulee")), ["Café de Flore"])
        XCTAssertEqual(merchants(try search("flo*")), ["Café de Flore"])
        XCTAssertEqual(merchants(try search("\"creme brulee\"")), ["Café de Flore"])
        XCTAssertEqual(merchants(try search("\"brulee creme\"")), [])
        XCTAssertEqual(merchants(try search("cafe", "screws")), [], "every word must match")
        // An amount: the receipt whose total it is comes first, then one whose text holds it.
        XCTAssertEqual(merchants(try search("23.45")), ["Café de Flore", "Nails R Us"])
        XCTAssertEqual(merchants(try search("23.450", "flore")), ["Café de Flore"])
        XCTAssertEqual(merchants(try search("23.45", "--category", "home")), ["Nails R Us"])
        XCTAssertEqual(merchants(try search("23.45", "--from", "2025-02-15")), ["Nails R Us"])
        XCTAssertEqual(merchants(try search("23.45", "--limit", "1")), ["Café de Flore"])
        // Nothing found is not an error.
        let none = try receipt("search", "zzzzqqq", "--json")
        XCTAssertEqual(none.status, 0, none.stderr)
        XCTAssertEqual((try JSONSerialization.jsonObject(with: none.stdoutData) as? [Any])?.count, 0)
        XCTAssertEqual(try receipt("search", "--json", "\"\"").status, 2, "an empty query is bad input")

        // Edits are searchable at once, and a deleted receipt is gone from results at once.
        try receipt("edit", cafe, "--merchant", "Le Procope")
        XCTAssertEqual(merchants(try search("procope")), ["Le Procope"])
        XCTAssertEqual(try receipt("rm", cafe).status, 0)
        XCTAssertEqual(merchants(try search("brulee")), [])
        XCTAssertEqual(merchants(try search("23.45")), ["Nails R Us"])
        let fsck = try receipt("fsck", "--quick")
        XCTAssertEqual(fsck.status, 0, fsck.stdout + fsck.stderr)
    }

    func testClaimsAreEditedListedShownAndFiltered() throws {
        let id = try importFile("rx.txt", Array("prescription".utf8), "--total", "10.00", "--currency", "USD")
        try importFile("other.txt", Array("groceries".utf8), "--total", "5.00", "--currency", "USD")
        let edited = try XCTUnwrap(try json("edit", id, "--status", "reimbursed", "--claim", "HSA-0117",
                                            "--reimbursed-on", "2025-04-02") as? [String: Any])
        XCTAssertEqual(edited["status"] as? String, "reimbursed")
        XCTAssertEqual(edited["claim"] as? String, "HSA-0117")
        XCTAssertEqual(edited["reimbursedOn"] as? String, "2025-04-02")
        let listed = try XCTUnwrap(try json("list", "--status", "reimbursed") as? [[String: Any]])
        XCTAssertEqual(listed.map { $0["id"] as? String }, [id])
        let others = try XCTUnwrap(try json("list", "--status", "none") as? [[String: Any]])
        XCTAssertEqual(others.count, 1)
        XCTAssertTrue(others[0]["claim"] is NSNull)
        XCTAssertEqual((try search("hsa-0117")).map { $0["id"] as? String }, [id], "the claim reference is searched")
        XCTAssertEqual(try search("prescription", "--status", "submitted").count, 0)
        let bad = try receipt("edit", id, "--status", "paid")
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.stderr.contains("invalid status 'paid'"), bad.stderr)
        XCTAssertEqual(try receipt("edit", id, "--reimbursed-on", "2025-13-40").status, 2)
        let cleared = try XCTUnwrap(try json("edit", id, "--claim", "") as? [String: Any])
        XCTAssertTrue(cleared["claim"] is NSNull)
    }

    func testReportSumsExactlyPerGroupAndCurrency() throws {
        for (i, (total, currency, category)) in [("0.10", "USD", "health"), ("0.20", "USD", "health"),
                                                  ("0.1", "EUR", "health"), ("19.999", "EUR", "health"),
                                                  ("5", "USD", "food")].enumerated() {
            try importFile("r\(i).txt", Array("receipt \(i)".utf8), "--total", total, "--currency", currency,
                           "--category", category, "--date", "2025-0\(i + 1)-15", "--no-index")
        }
        try importFile("none.txt", Array("no total".utf8), "--category", "health", "--no-index")
        let report = try XCTUnwrap(try json("report", "--csv", folder.file("r.csv"), "--chart", folder.file("r.svg"))
            as? [String: Any])
        let groups = try XCTUnwrap(report["groups"] as? [[String: Any]])
        let flat = groups.map { "\($0["key"] as? String ?? "nil") \($0["currency"] as? String ?? "nil") \($0["count"] as? Int ?? -1) \($0["total"] as? String ?? "")" }
        XCTAssertEqual(flat, ["food USD 1 5", "health EUR 2 20.099", "health USD 2 0.30"])
        XCTAssertEqual(report["withoutTotal"] as? Int, 1)
        let byMonth = try XCTUnwrap(try json("report", "--by", "month", "--category", "health", "--from", "2025-02-01") as? [String: Any])
        XCTAssertEqual((byMonth["groups"] as? [[String: Any]])?.map { $0["key"] as? String }, ["2025-02", "2025-03", "2025-04"])
        let csv = try String(contentsOfFile: folder.file("r.csv"), encoding: .utf8)
        XCTAssertTrue(csv.hasPrefix("category,currency,count,total\r\nfood,USD,1,5\r\nhealth,EUR,2,20.099\r\n"), csv)
        let svg = try Data(contentsOf: URL(fileURLWithPath: folder.file("r.svg")))
        let parser = XMLParser(data: svg)
        XCTAssertTrue(parser.parse(), "the chart is well-formed XML")
        XCTAssertTrue(String(decoding: svg, as: UTF8.self).contains("20.099 EUR"))
        XCTAssertEqual(try receipt("report", "--by", "weekday").status, 2)
    }

    func testIndexKilledWithSIGKILLResumesWhereItWas() throws {
        // Twelve different scanned PDFs (the same pages, a different trailing comment): OCR takes seconds.
        let pdf = try Data(contentsOf: URL(fileURLWithPath: Self.fixtures + "/2025/hotel-invoice.pdf"))
        var paths: [String] = []
        for i in 0..<12 { paths.append(try folder.write("scans/scan\(i).pdf", [UInt8](pdf) + Array("%copy \(i)\n".utf8))) }
        let r = try receipt(["import", "--no-index"] + paths)
        XCTAssertEqual(r.status, 0, r.stderr)
        func pending() throws -> Int { (try json("stats") as? [String: Any])?["pendingIndex"] as? Int ?? -1 }
        XCTAssertEqual(try pending(), 12)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: ReceiptBinary.path)
        process.arguments = ["--vault", vault, "index"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Wait until a first batch is committed, then kill it in the middle of the next one.
        let deadline = Date().addingTimeInterval(300)
        var left = 12
        while left == 12 && Date() < deadline && process.isRunning { left = try pending() }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        XCTAssertLessThan(left, 12, "the first batch was committed before the kill")
        XCTAssertGreaterThan(left, 0, "the kill came before the end")
        XCTAssertEqual(process.terminationReason, .uncaughtSignal)

        let resumed = try XCTUnwrap(try json("index") as? [String: Any])
        XCTAssertEqual(resumed["extracted"] as? Int, left, "only what was left is extracted again")
        XCTAssertEqual(resumed["failed"] as? Int, 0)
        XCTAssertEqual(resumed["pending"] as? Int, 0)
        XCTAssertEqual(try search("breakfast", "--limit", "50").count, 12)
        let fsck = try receipt("fsck", "--quick")
        XCTAssertEqual(fsck.status, 0, fsck.stdout + fsck.stderr)
    }
}
