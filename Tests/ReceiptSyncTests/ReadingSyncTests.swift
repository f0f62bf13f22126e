import Foundation
import TestSupport
import XCTest

/// What a vault read from a receipt's text travels with the receipt (docs/PROTOCOL.md, revision 6):
/// two real vaults, the real Tesseract on a real photo, a real server.
final class ReadingSyncTests: HouseholdTestCase {
    static let photo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/read/us-pharmacy.png").path

    func show(_ member: Member, _ id: String) async throws -> [String: Any] {
        let shown = try await member.ok(["show", id, "--json"]).json
        return try XCTUnwrap(shown as? [String: Any])
    }

    func queue(_ member: Member) async throws -> [String] {
        (try await member.ok(["review", "--json"]).json as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
    }

    /// Alice and Bob (write) share `household`; Alice reads dates month first.
    func household() async throws -> Household {
        let h = try await Household.start(["alice", "bob"])
        try await h["alice"].ok(["config", "locale", "en-US"])
        try await h["alice"].ok(["zone", "create", "household"])
        try await h["alice"].ok(["share", "household", "bob", "--role", "write"])
        return h
    }

    func testAReadingReachesTheOtherVaultAndItsAcceptsComeBack() async throws {
        let h = try await household()
        defer { Task { await h.shutdown() } }
        let alice = h["alice"], bob = h["bob"]
        let id = importedID(try await alice.ok(["import", Self.photo, "--zone", "household", "--json"]))
        let read = try await show(alice, id)
        XCTAssertEqual(read["filled"] as? [String], ["currency", "date", "total"])
        let suggestions = try XCTUnwrap(read["suggestions"] as? [String: Any])
        XCTAssertEqual((suggestions["merchant"] as? [String: Any])?["value"] as? String, "WALGREENS #4411")
        _ = try await alice.sync()
        _ = try await bob.sync()

        let pulled = try await show(bob, id)
        XCTAssertEqual(pulled["filled"] as? [String], ["currency", "date", "total"])
        XCTAssertEqual(pulled["suggestions"] as? NSDictionary, suggestions as NSDictionary)
        checkEqual(try await queue(bob), [id])

        // Confirming a filled field changes no value, yet it is a change the household must see.
        try await bob.ok(["review", "accept", id, "--fields", "total"])
        checkEqual(try await bob.sync()["pushed"] as? Int, 1)
        _ = try await alice.sync()
        checkEqual(try await show(alice, id)["filled"] as? [String], ["currency", "date"])

        try await bob.ok(["review", "accept", id])
        checkEqual(try await bob.sync()["pushed"] as? Int, 1)
        _ = try await alice.sync()
        let back = try await show(alice, id)
        XCTAssertEqual(back["filled"] as? [String], [])
        XCTAssertEqual((back["suggestions"] as? [String: Any])?.count, 0)
        XCTAssertEqual(back["merchant"] as? String, "WALGREENS #4411")
        checkEqual(try await queue(alice), [])
    }

    func testATypedValueIsNotOverwrittenByAValueFilledLaterOnAnotherVault() async throws {
        let h = try await household()
        defer { Task { await h.shutdown() } }
        let alice = h["alice"], bob = h["bob"]
        let id = importedID(try await alice.ok(["import", Self.photo, "--zone", "household", "--no-index", "--json"]))
        _ = try await alice.sync()
        _ = try await bob.sync()
        try await bob.ok(["edit", id, "--total", "17.00"])
        // Alice reads the photo after Bob typed: her filled total is the later change.
        try await alice.ok(["index"])
        checkEqual(try await show(alice, id)["total"] as? String, "16.85")
        _ = try await bob.sync()
        let merged = try await alice.sync()
        XCTAssertEqual(merged["conflicts"] as? Int, 1)
        _ = try await bob.sync()
        for member in [alice, bob] {
            let r = try await show(member, id)
            XCTAssertEqual(r["total"] as? String, "17.00", "\(member.name) keeps what Bob typed")
            XCTAssertEqual(r["filled"] as? [String], ["currency", "date"], member.name)
        }
    }

    /// A correction made elsewhere teaches this vault too: the header line Bob renamed fills the
    /// shop's next receipt in Alice's vault once she has pulled his edit.
    func testACorrectionPulledFromAnotherVaultTeachesThisOne() async throws {
        let h = try await household()
        defer { Task { await h.shutdown() } }
        let alice = h["alice"], bob = h["bob"]
        let folder = URL(fileURLWithPath: Self.photo).deletingLastPathComponent().path
        let id = importedID(try await alice.ok(["import", folder + "/corner-shop-a.png", "--zone", "household", "--json"]))
        let read = try await show(alice, id)
        XCTAssertEqual(((read["suggestions"] as? [String: Any])?["merchant"] as? [String: Any])?["line"] as? String, "CORNER SHOP")
        _ = try await alice.sync()
        _ = try await bob.sync()
        try await bob.ok(["edit", id, "--merchant", "Corner Shop Köln"])
        _ = try await bob.sync()
        _ = try await alice.sync()
        let next = importedID(try await alice.ok(["import", folder + "/corner-shop-b.png", "--zone", "household", "--json"]))
        let shop = try await show(alice, next)
        XCTAssertEqual(shop["merchant"] as? String, "Corner Shop Köln")
        XCTAssertTrue((shop["filled"] as? [String] ?? []).contains("merchant"), "\(shop)")
    }
}
