import Foundation
import ReceiptServer
import TestSupport
import XCTest

/// The receipt's page (issue #32 point 4): previous / next within the list's filter, a PDF's pages
/// on demand, the file's extracted text in a fold.
class WebReceiptPageTests: HouseholdTestCase {
    func testAReceiptPageStepsThroughItsFilterShowsItsTextAndEachPageOfItsPDF() async throws {
        let h = try await Household.start(["alice"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"]
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/2025").path
        var ids: [String: String] = [:]
        for (merchant, file, date) in [("Hotel", "\(fixtures)/hotel-invoice.pdf", "2025-05-01"),
                                       ("Acme", "\(fixtures)/acme-hardware.pdf", "2025-05-02"),
                                       ("Zed", try h.file("zed.pdf", size: 900, seed: 9).path, "2025-05-03")] {
            ids[merchant] = importedID(try await alice.ok(["import", file, "--merchant", merchant, "--date", date, "--json"]))
        }
        try await alice.ok(["index"])  // the text reaches the server with the sync
        _ = try await alice.sync()
        var web = try await browser(h, signedInAs: "alice")

        // The list's links carry its filter and each receipt's place in it.
        let list = try await web.get("/z/alice/personal?sort=date")
        let acmeLink = "/z/alice/personal/r/\(ids["Acme"]!)?sort=date&amp;at=1"
        XCTAssertTrue(list.body.contains("href=\"\(acmeLink)\""), list.body)
        let acme = try await web.get(acmeLink.replacingOccurrences(of: "&amp;", with: "&"))
        checkEqual(acme.status, 200, acme.body)
        XCTAssertTrue(acme.body.contains("href=\"/z/alice/personal/r/\(ids["Zed"]!)?sort=date&amp;at=0\" rel=\"prev\""), acme.body)
        XCTAssertTrue(acme.body.contains("href=\"/z/alice/personal/r/\(ids["Hotel"]!)?sort=date&amp;at=2\" rel=\"next\""), acme.body)
        XCTAssertTrue(acme.body.contains("2 of 3"), acme.body)
        XCTAssertTrue(acme.body.contains("Text read from acme-hardware.pdf") && acme.body.contains("ACME HARDWARE"), acme.body)
        let last = try await web.get("/z/alice/personal/r/\(ids["Hotel"]!)?sort=date&at=2")
        XCTAssertTrue(last.body.contains("rel=\"prev\"") && !last.body.contains("rel=\"next\""), last.body)
        checkEqual(try await web.get("/z/alice/personal/r/\(ids["Hotel"]!)?sort=date&at=-1").status, 400)

        // The two-page PDF: its first page shown, a link to the second; past its end, 404.
        let hotel = try await web.get("/z/alice/personal/r/\(ids["Hotel"]!)")
        let listed = try await alice.receipts()
        let sha = try XCTUnwrap(listed[ids["Hotel"]!]?["attachments"] as? [[String: Any]])[0]["sha256"] as? String ?? ""
        let pages = "/z/alice/personal/r/\(ids["Hotel"]!)/t/\(sha)?page="
        XCTAssertTrue(hotel.body.contains("src=\"\(pages)1\"") && hotel.body.contains("href=\"\(pages)2\">page 2</a>"), hotel.body)
        let second = try await web.get(pages + "2")
        checkEqual(second.status, 200, second.body)
        XCTAssertEqual(second.header("Content-Type"), "image/png")
        checkEqual(try await web.get(pages + "3").status, 404)
        checkEqual(try await web.get(pages + "0").status, 400)
    }
}

/// The same over a server whose catalog is in PostgreSQL.
final class PostgresWebReceiptPageTests: WebReceiptPageTests {
    override class var postgres: Bool { true }

    /// (A test of its own also makes XCTest on Linux find the inherited ones.) A place the list no
    /// longer has (it changed since the link was made): the page, without neighbours.
    func testAPlaceTheListNoLongerHasShowsTheReceiptWithoutNeighbours() async throws {
        let h = try await Household.start(["alice"])
        defer { Task { await h.shutdown() } }
        let id = importedID(try await h["alice"].ok(["import", try h.file("a.pdf", size: 500, seed: 1).path, "--merchant", "Only", "--json"]))
        _ = try await h["alice"].sync()
        var web = try await browser(h, signedInAs: "alice")
        let page = try await web.get("/z/alice/personal/r/\(id)?at=40")
        checkEqual(page.status, 200, page.body)
        XCTAssertTrue(page.body.contains("Only") && !page.body.contains("rel=\"prev\"") && !page.body.contains("rel=\"next\""), page.body)
    }
}
