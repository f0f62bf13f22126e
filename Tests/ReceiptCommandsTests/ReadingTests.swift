import Foundation
import XCTest

/// Fields read from receipts' text by the real binary and the real Tesseract: filled when certain,
/// suggested when not, never over what a person typed; review and edit confirm and teach.
final class ReadingTests: CLITestCase {
    static let read = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/read").path

    func importReceipt(_ name: String, _ meta: String...) throws -> [String: Any] {
        let out = try XCTUnwrap(try json(["import", Self.read + "/" + name] + meta) as? [String: Any])
        let id = try XCTUnwrap((out["imported"] as? [[String: Any]])?.first?["id"] as? String)
        return try show(id)
    }

    func show(_ id: String) throws -> [String: Any] {
        try XCTUnwrap(try json("show", id) as? [String: Any])
    }

    func suggestion(_ receipt: [String: Any], _ field: String) -> [String: Any]? {
        (receipt["suggestions"] as? [String: Any])?[field] as? [String: Any]
    }

    func testACertainReceiptIsFilledAndWaitsForReview() throws {
        XCTAssertEqual(try receipt("config", "locale", "en-US").status, 0)
        let r = try importReceipt("us-pharmacy.png")
        XCTAssertEqual(r["date"] as? String, "2025-03-04", "en-US reads 03/04 month first")
        XCTAssertEqual(r["total"] as? String, "16.85")
        XCTAssertEqual(r["currency"] as? String, "USD")
        XCTAssertEqual(Set(r["filled"] as? [String] ?? []), ["date", "total", "currency"])
        XCTAssertEqual(suggestion(r, "merchant")?["value"] as? String, "WALGREENS #4411", "a name without a legal form is offered")
        let queue = try XCTUnwrap(try json("review") as? [[String: Any]])
        XCTAssertEqual(queue.map { $0["id"] as? String }, [r["id"] as? String])
        let accepted = try XCTUnwrap(try json("review", "accept", r["id"] as! String) as? [String: Any])
        XCTAssertEqual(accepted["merchant"] as? String, "WALGREENS #4411")
        XCTAssertEqual(accepted["filled"] as? [String], [])
        XCTAssertEqual((accepted["suggestions"] as? [String: Any])?.count, 0)
        XCTAssertEqual((try json("review") as? [[String: Any]])?.count, 0, "nothing is left to review")
    }

    func testARotatedPhotoKeepsItsTotal() throws {
        // Tilted 6°: Tesseract's page layout split its labels from their amounts and the total was lost.
        let r = try importReceipt("rotated-grocer.jpg")
        XCTAssertEqual(r["total"] as? String, "9.00")
        XCTAssertTrue((r["filled"] as? [String] ?? []).contains("total"), "cash 10.00 less change 1.00 confirms it")
        XCTAssertEqual(r["currency"] as? String, "GBP")
        XCTAssertEqual(r["merchant"] as? String, "GREEN GROCER LTD")
    }

    func testATypedFieldIsNeverReadOverAndADecimalCommaIsATotal() throws {
        let r = try importReceipt("eu-cafe.jpg", "--merchant", "Café Müller", "--category", "food")
        XCTAssertEqual(r["merchant"] as? String, "Café Müller")
        XCTAssertEqual(r["total"] as? String, "11.30")
        XCTAssertEqual(r["date"] as? String, "2025-03-14")
        XCTAssertEqual(r["currency"] as? String, "EUR")
        XCTAssertFalse((r["filled"] as? [String] ?? []).contains("merchant"))
        XCTAssertNil(suggestion(r, "merchant"), "a typed field gets no suggestion either")
    }

    func testAnOpenDayOrderIsOnlySuggestedAndACorrectionIsRememberedForTheMerchant() throws {
        let first = try importReceipt("us-pharmacy.png")
        XCTAssertNil(first["date"] as? String, "03/04/2025 with no locale and a $ that many countries use: not filled")
        XCTAssertNotNil(suggestion(first, "date"))
        let id = try XCTUnwrap(first["id"] as? String)
        XCTAssertEqual(try receipt("edit", id, "--date", "2025-03-04").status, 0)
        let edited = try show(id)
        XCTAssertNil(suggestion(edited, "date"), "an edit confirms what it sets")
        // The re-scan of the same shop: its date order is now known.
        let rescan = try importReceipt("us-pharmacy-rescan.jpg")
        XCTAssertEqual(rescan["date"] as? String, "2025-03-04")
        XCTAssertTrue((rescan["filled"] as? [String] ?? []).contains("date"))
    }

    func testARenamedHeaderBecomesTheMerchantOfTheShopsNextReceipt() throws {
        let a = try importReceipt("corner-shop-a.png")
        let id = try XCTUnwrap(a["id"] as? String)
        XCTAssertEqual(suggestion(a, "merchant")?["line"] as? String, "CORNER SHOP")
        XCTAssertEqual(try receipt("edit", id, "--merchant", "Corner Shop Köln").status, 0)
        let b = try importReceipt("corner-shop-b.png")
        XCTAssertEqual(b["merchant"] as? String, "Corner Shop Köln")
        XCTAssertTrue((b["filled"] as? [String] ?? []).contains("merchant"))
        let text = try receipt("show", id, "--text")
        XCTAssertTrue(text.stdout.contains("== corner-shop-a.png"), text.stdout)
        XCTAssertTrue(text.stdout.contains("Milk"), text.stdout)
    }

    func testBadReviewAndConfigInputChangesNothing() throws {
        let r = try importReceipt("corner-shop-a.png")
        let id = try XCTUnwrap(r["id"] as? String)
        let before = try state()
        let bad = try receipt("review", "accept", id, "--fields", "colour")
        XCTAssertNotEqual(bad.status, 0)
        XCTAssertTrue(bad.stderr.contains("unknown field 'colour'"), bad.stderr)
        let other = try receipt("review", "accept", "00000000", "--fields", "total")
        XCTAssertNotEqual(other.status, 0)
        XCTAssertTrue(other.stderr.contains("no receipt 00000000"), other.stderr)
        let locale = try receipt("config", "locale", "english please")
        XCTAssertNotEqual(locale.status, 0)
        XCTAssertTrue(locale.stderr.contains("invalid locale"), locale.stderr)
        XCTAssertEqual(try state(), before)
    }
}
