import Foundation
import ReceiptServer
import TestSupport
import XCTest

/// The review queue in the browser (issue #32 point 3): what a member's vault read from a receipt's
/// photo (the real Tesseract) reaches the server with the receipt, and the web view lists it, shows
/// each field with the line it came from and a re-scan's twin, and takes accept and correct as one
/// push each, refused for a read member, without the CSRF token or on a stale change tag.
class WebReviewTests: HouseholdTestCase {
    static let read = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/read").path

    /// The zone's records as the sync API gives them (JSON, as any client reads them), by id.
    func records(_ h: Household, _ member: Member) async throws -> [String: Record] {
        let answer = try await h.raw.call(.GET, "/v1/zones/alice/household/changes", token: member.token)
        let page = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any])
        var out: [String: Record] = [:]
        for record in page["records"] as? [[String: Any]] ?? [] {
            let id = record["id"] as? String ?? ""
            out[id] = Record(changeTag: record["changeTag"] as? String ?? "", receipt: record["receipt"] as? [String: Any] ?? [:])
        }
        return out
    }

    struct Record {
        let changeTag: String
        let receipt: [String: Any]
        var filled: [String]? { receipt["filled"] as? [String] }
    }

    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "'", with: "&#39;")
    }

    func testTheQueueShowsWhatWasReadTakesAcceptAndCorrectAndMovesOn() async throws {
        let h = try await Household.start(["alice", "carol"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"], carol = h["carol"]
        try await alice.ok(["config", "locale", "en-US"])
        try await alice.ok(["zone", "create", "household"])
        try await alice.ok(["share", "household", "carol", "--role", "read"])
        // The photo and its re-scan: the same merchant (typed), date and total (read).
        var ids: [String] = []
        for file in ["us-pharmacy.png", "us-pharmacy-rescan.jpg"] {
            ids.append(importedID(try await alice.ok(["import", "\(Self.read)/\(file)", "--zone", "household", "--merchant", "Walgreens", "--json"])))
        }
        _ = try await alice.sync()
        _ = try await carol.sync()
        let stored = try await records(h, alice)
        for id in ids {
            XCTAssertEqual(stored[id]?.filled, ["currency", "date", "total"], "the reading reached the server")
            XCTAssertEqual(stored[id]?.receipt["total"] as? String, "16.85")
        }
        var web = try await browser(h, signedInAs: "alice")
        let list = try await web.get("/z/alice/household")
        XCTAssertTrue(list.body.contains("href=\"/z/alice/household/review\" class=\"to-review\">To review (2)</a>"), list.body)

        // The first of the queue (by id): its image, each field with the line it came from, its twin.
        let (first, second) = (ids.min()!, ids.max()!)
        let page = try await web.get("/z/alice/household/review")
        checkEqual(page.status, 200, page.body)
        let record = try XCTUnwrap(stored[first]?.receipt)
        let sha = try XCTUnwrap((record["attachments"] as? [[String: Any]])?.first?["sha256"] as? String)
        let lines = try XCTUnwrap(record["filledLines"] as? [String: String])
        XCTAssertTrue(page.body.contains("src=\"/z/alice/household/r/\(first)/f/\(sha)\""), page.body)
        for name in ["currency", "date", "total"] {
            let line = try XCTUnwrap(lines[name], name)
            XCTAssertTrue(page.body.contains("<q>\(Self.escaped(line))</q>"), "\(name): \(line)\n\(page.body)")
            XCTAssertTrue(page.body.contains("name=\"value\" value=\"\(record[name] as? String ?? "?")\""), page.body)
        }
        XCTAssertTrue(page.body.contains("href=\"/z/alice/household/r/\(second)\" class=\"twin\""), page.body)
        XCTAssertTrue(page.body.contains("href=\"/z/alice/household/review?after=\(first)\" rel=\"next\">Skip</a>"), page.body)
        let tag = stored[first]?.changeTag ?? ""

        // Refused: a read member, a form without its token, a stale change tag, a bad correction.
        var reader = try await browser(h, signedInAs: "carol")
        let readerPage = try await reader.get("/z/alice/household/review")
        XCTAssertFalse(readerPage.body.contains(">Accept</button>"), "a read member sees the queue without its buttons")
        let action = "/z/alice/household/r/\(first)/review"
        checkEqual(try await reader.post(action, [("changeTag", tag), ("accept", "all")]).status, 403)
        var tokenless = web
        tokenless.csrf = "0"
        checkEqual(try await tokenless.post(action, [("changeTag", tag), ("accept", "all")]).status, 403)
        let stale = try await web.post(action, [("changeTag", "0123456789abcdef"), ("accept", "total")])
        checkEqual(stale.status, 409)
        XCTAssertTrue(stale.body.contains("open the review again"), stale.body)
        checkEqual(try await web.post(action, [("changeTag", tag), ("correct", "total"), ("value", "a lot")]).status, 400)
        checkEqual(try await web.post(action, [("changeTag", tag), ("accept", "merchant")]).status, 400)
        checkEqual(try await records(h, alice)[first]?.changeTag, tag, "nothing was written")

        // Accept one field: the same receipt, with the others left; correct the total with a comma.
        let accepted = try await web.post(action, [("changeTag", tag), ("accept", "currency")])
        checkEqual(accepted.status, 303, accepted.body)
        checkEqual(accepted.header("Location"), "/z/alice/household/review?from=\(first)")
        let after = try await records(h, alice)[first]
        XCTAssertEqual(after?.filled, ["date", "total"])
        let again = try await web.get("/z/alice/household/review?from=\(first)")
        XCTAssertTrue(again.body.contains("To review (2)") && again.body.contains("/r/\(first)/review"), again.body)
        let corrected = try await web.post(action, [("changeTag", after?.changeTag ?? ""), ("correct", "total"), ("value", "16,95")])
        checkEqual(corrected.status, 303, corrected.body)
        let afterCorrection = try await records(h, alice)[first]
        XCTAssertEqual(afterCorrection?.receipt["total"] as? String, "16.95")
        XCTAssertEqual(afterCorrection?.filled, ["date"])
        // Accept all: the receipt leaves the queue and the next one is shown.
        let all = try await web.post(action, [("changeTag", afterCorrection?.changeTag ?? ""), ("accept", "all")])
        checkEqual(all.status, 303, all.body)
        let next = try await web.get(all.header("Location") ?? "")
        XCTAssertTrue(next.body.contains("To review (1)") && next.body.contains("/r/\(second)/review"), next.body)
        let done = try await records(h, alice)[first]
        XCTAssertNotNil(done?.receipt)
        XCTAssertNil(done?.filled)

        // The receipt page's form is a person's edit: the date it changes is no longer filled.
        let stored2 = try await records(h, alice)
        let twin = try XCTUnwrap(stored2[second])
        let edited = try await web.post("/z/alice/household/r/\(second)", [
            ("changeTag", twin.changeTag), ("merchant", "Walgreens"), ("date", "2025-03-05"), ("total", twin.receipt["total"] as? String ?? ""),
            ("currency", twin.receipt["currency"] as? String ?? "")])
        checkEqual(edited.status, 303, edited.body)
        let afterEdit = try await records(h, alice)[second]
        XCTAssertEqual(afterEdit?.receipt["date"] as? String, "2025-03-05")
        XCTAssertEqual(afterEdit?.filled, ["currency", "total"])

                // The vault pulls what the browser confirmed: nothing of that receipt is left to review.
        _ = try await alice.sync()
        let shownJSON = try await alice.ok(["show", first, "--json"]).json
        let shown = try XCTUnwrap(shownJSON as? [String: Any])
        XCTAssertEqual(shown["filled"] as? [String], [])
        XCTAssertEqual(shown["total"] as? String, "16.95")
        let queue = (try await alice.ok(["review", "--json"]).json as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        XCTAssertEqual(queue, [second])
    }
}

/// The same over a server whose catalog is in PostgreSQL.
final class PostgresWebReviewTests: WebReviewTests {
    override class var postgres: Bool { true }

    /// (A test of its own also makes XCTest on Linux find the inherited ones.) A zone with nothing
    /// to review says so, and a queue's end offers to start again.
    func testAnEmptyQueueAndTheEndOfTheQueue() async throws {
        let (h, web) = try await signedIn()
        defer { Task { await h.shutdown() } }
        var browser = web
        let empty = try await browser.get("/z/alice/z/review")
        checkEqual(empty.status, 200, empty.body)
        XCTAssertTrue(empty.body.contains("To review (0)") && empty.body.contains("Nothing to review"), empty.body)
        checkEqual(try await browser.get("/z/alice/z/review?after=not-an-id").status, 400)
        let list = try await browser.get("/z/alice/z")
        XCTAssertFalse(list.body.contains("To review"), list.body)
    }
}
