import Foundation
import XCTest

/// `search` forgives how an amount is written (currency marks, a sign), tells a time from an amount,
/// and names indexed words near a query that found nothing (real binary, real SQLite FTS5).
final class ForgivingSearchTests: CLITestCase {
    /// `--json` before the query: after `--` it would be a word of the query.
    func ids(_ args: String...) throws -> [String] {
        let r = try receipt(["search", "--json"] + args)
        XCTAssertEqual(r.status, 0, r.stderr)
        let found = try JSONSerialization.jsonObject(with: r.stdoutData) as? [[String: Any]]
        return try XCTUnwrap(found).compactMap { $0["id"] as? String }
    }

    func testAmountsWithCurrencyMarksAndNegativeAmountsFindTheirTotals() throws {
        // The texts do not print the totals: only the total can find them.
        let pharmacy = try importFile("pharmacy.txt", Array("Walgreens\nthank you\n".utf8), "--total", "16.85", "--currency", "USD")
        let zurich = try importFile("zurich.txt", Array("Bahnhof Kiosk\n".utf8), "--total", "18.00", "--currency", "CHF")
        let cafe = try importFile("cafe.txt", Array("Cafe Muller\n".utf8), "--total", "11.30", "--currency", "EUR")
        let refund = try importFile("refund.txt", Array("Returned lamp\n".utf8), "--total=-19.99")
        _ = try importFile("lamp.txt", Array("Bought lamp\n".utf8), "--total", "19.99")
        XCTAssertEqual(try ids("$16.85"), [pharmacy])
        XCTAssertEqual(try ids("16.85$"), [pharmacy])
        XCTAssertEqual(try ids("CHF", "18.00"), [zurich])
        XCTAssertEqual(try ids("chf18.00"), [zurich])
        XCTAssertEqual(try ids("€11,30"), [cafe])
        XCTAssertEqual(try ids("11,30", "EUR"), [cafe])
        XCTAssertEqual(try ids("--", "-19.99"), [refund])
        XCTAssertEqual(try ids("19.99-"), [refund])
        XCTAssertEqual(try ids("--", "-19.99", "lamp"), [refund], "a negative amount and a word")
    }

    func testATimeIsNotAnAmountNorAnAmountATime() throws {
        let paid = try importFile("paid.txt", Array("Kiosk\nPaid at 14:32\n".utf8))
        let coffee = try importFile("coffee.txt", Array("Kiosk\nCoffee 14.32\n".utf8))
        let euro = try importFile("euro.txt", Array("Kiosk\nTee 14,32\n".utf8))
        XCTAssertEqual(try ids("14:32"), [paid])
        XCTAssertEqual(Set(try ids("14.32")), [coffee, euro])
        XCTAssertEqual(Set(try ids("kiosk", "14,32")), [coffee, euro])
    }

    func testNoMatchPrintsAnEmptyListAndNamesTheNearestIndexedWords() throws {
        _ = try importFile("rx.txt", Array("Pharmacy\nAmoxicillin 500 mg\n3 boxes\nIbuprofen\n".utf8))
        let typo = try receipt("search", "amoxicilin", "--json")
        XCTAssertEqual(typo.status, 0, typo.stderr)
        XCTAssertEqual((try JSONSerialization.jsonObject(with: typo.stdoutData) as? [Any])?.count, 0, typo.stdout)
        XCTAssertTrue(typo.stderr.contains("did you mean: amoxicillin"), typo.stderr)
        let human = try receipt("search", "ibuprofem")
        XCTAssertEqual(human.status, 0)
        XCTAssertEqual(human.stdout, "")
        XCTAssertTrue(human.stderr.contains("did you mean: ibuprofen"), human.stderr)
        for far in ["zebra", "é", "x"] {
            let nothingNear = try receipt("search", far)
            XCTAssertFalse(nothingNear.stderr.contains("did you mean"), "\(far): \(nothingNear.stderr)")
        }
    }
}
