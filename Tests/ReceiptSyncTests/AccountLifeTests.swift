import Foundation
import ReceiptWire
import TestSupport
import XCTest

/// Accounts and tokens over their whole life, through `receipt server ...` on the data folder of a
/// running server: several tokens per account, rotation and revocation that hold at the next request,
/// removal with its shares.
final class AccountLifeTests: XCTestCase {
    func server(_ h: Household, _ args: [String]) async throws -> CLI.Result {
        try await CLI.run(["server"] + args + ["--data", h.server.data], in: h.folder)
    }

    func token(_ result: CLI.Result, file: StaticString = #filePath, line: UInt = #line) -> String {
        let object = result.json as? [String: Any]
        XCTAssertEqual(result.status, 0, result.stderr, file: file, line: line)
        return object?["token"] as? String ?? ""
    }

    func status(_ h: Household, _ token: String) async throws -> Int {
        try await h.raw.call(.GET, "/v1/account", token: token).status
    }

    func testTokensPerDeviceRotateAndRevokeAtOnce() async throws {
        let h = try await Household.start(["alice", "bob"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"]
        let phone = token(try await server(h, ["token-add", "alice", "--label", "phone", "--json"]))
        XCTAssertEqual(phone.count, 64)
        checkEqual(try await status(h, phone), 200)
        checkEqual(try await status(h, alice.token), 200)
        let duplicate = try await server(h, ["token-add", "alice", "--label", "phone"])
        XCTAssertNotEqual(duplicate.status, 0)
        XCTAssertTrue(duplicate.stderr.contains("phone"), duplicate.stderr)

        // The lost phone is revoked alone.
        let revoked = try await server(h, ["token-revoke", "alice", "phone", "--json"])
        XCTAssertEqual(revoked.status, 0, revoked.stderr)
        checkEqual(try await status(h, phone), 401)
        checkEqual(try await status(h, alice.token), 200)
        let missing = try await server(h, ["token-revoke", "alice", "phone"])
        XCTAssertEqual(missing.status, 2)

        let list = try await server(h, ["account-list", "--json"])
        XCTAssertEqual(list.status, 0, list.stderr)
        let accounts = list.json as? [[String: Any]] ?? []
        XCTAssertEqual(accounts.map { $0["account"] as? String }, ["alice", "bob"])
        let aliceTokens = (accounts.first?["tokens"] as? [[String: Any]])?.map { $0["label"] as? String }
        XCTAssertEqual(aliceTokens, ["default"])
        XCTAssertFalse(list.stdout.contains(alice.token), "account-list must never print a token")

        // Rotation: the old token is refused from the next request on; the vault says how to update it.
        try await alice.ok(["import", try h.file("a.pdf", size: 3000, seed: 1).path])
        let rotated = token(try await server(h, ["token-rotate", "alice", "--json"]))
        checkEqual(try await status(h, alice.token), 401)
        checkEqual(try await status(h, rotated), 200)
        let stale = try await alice.run(["sync"])
        XCTAssertEqual(stale.status, 1)
        XCTAssertTrue(stale.stderr.contains("rotated") && stale.stderr.contains("remote set"), stale.stderr)
        try await alice.ok(["remote", "set", h.server.url, "--account", "alice", "--token", rotated])
        let synced = try await alice.sync()
        XCTAssertEqual(synced["pushed"] as? Int, 1)
    }

    func testAccountRemovalRefusedWhileItSharesZonesAndDropsItsShares() async throws {
        let h = try await Household.start(["alice", "bob", "carol"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"], bob = h["bob"]
        try await alice.ok(["zone", "create", "household"])
        try await alice.ok(["share", "household", "bob", "--role", "write"])
        try await bob.ok(["zone", "create", "garage"])
        try await bob.ok(["share", "garage", "alice", "--role", "read"])
        try await bob.ok(["import", try h.file("b.pdf", size: 2000, seed: 2).path, "--zone", "garage"])
        _ = try await bob.sync()

        let refused = try await server(h, ["account-remove", "bob"])
        XCTAssertEqual(refused.status, 2)
        XCTAssertTrue(refused.stderr.contains("garage") && refused.stderr.contains("--delete-zones"), refused.stderr)
        checkEqual(try await status(h, bob.token), 200)

        let removed = try await server(h, ["account-remove", "bob", "--delete-zones", "--json"])
        XCTAssertEqual(removed.status, 0, removed.stderr)
        let report = removed.json as? [String: Any]
        XCTAssertEqual(report?["deletedZones"] as? [String], ["garage", "personal"])
        XCTAssertEqual(report?["removedShares"] as? Int, 1)
        checkEqual(try await status(h, bob.token), 401)
        // bob's share in alice's zone is gone, and so is his zone for alice.
        let shares = try await h.raw.call(.GET, "/v1/zones/alice/household/shares", token: alice.token)
        XCTAssertEqual(shares.status, 200)
        XCTAssertFalse(shares.text.contains("bob"), shares.text)
        _ = try await alice.sync()
        let zones = try await alice.zones().compactMap { $0["zone"] as? String }
        XCTAssertFalse(zones.contains("bob/garage"), "\(zones)")
        let list = try await server(h, ["account-list", "--json"])
        XCTAssertEqual((list.json as? [[String: Any]])?.map { $0["account"] as? String }, ["alice", "carol"])
        // An account that shares nothing goes without the flag.
        checkEqual(try await server(h, ["account-remove", "carol"]).status, 0)
    }
}
