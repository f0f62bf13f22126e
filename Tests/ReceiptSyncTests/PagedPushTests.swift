import BlobStore
import Foundation
import ReceiptSync
@testable import ReceiptVault
import TestSupport
import XCTest

/// The push reads the outbox a page at a time (memory for one page, not the vault). With pages of
/// two entries: every receipt reaches the server once, in its latest version, however many entries
/// it has and wherever they fall; a receipt created and deleted unseen is settled; the vault that
/// pulls it all has exact stats and a clean fsck.
final class PagedPushTests: HouseholdTestCase {
    func testAPushInSmallPagesSendsEachReceiptOnceInItsLatestVersion() async throws {
        let h = try await Household.start(["alice"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"]
        let shared = try h.file("shared.pdf", size: 150_000, seed: 81)
        var ids: [String] = []
        for i in 0..<7 {
            let own = try h.file("receipt-\(i).jpg", size: i % 2 == 0 ? 700 : 40_000 + i, seed: 90 + UInt64(i))
            ids.append(importedID(try await alice.ok(["import", own.path, "--json"])))
        }
        for id in ids[1...3] { try await alice.ok(["attach", id, shared.path]) }
        // Entries of one receipt on several pages: the first (import) early, the last after the others.
        try await alice.ok(["edit", ids[0], "--merchant", "First edit"])
        try await alice.ok(["edit", ids[5], "--merchant", "Other"])
        try await alice.ok(["edit", ids[0], "--merchant", "Latest"])
        try await alice.ok(["rm", ids[6]])

        let vault = try Vault.open(at: alice.vault)
        let remote = try XCTUnwrap(try RemoteConfig.load(vault))
        let engine = try SyncEngine(vault: vault, remote: remote)
        engine.pushPage = 2
        let report = try await engine.run()
        XCTAssertEqual(report.errors, [])
        XCTAssertEqual(report.pushed, 6, "7 imported, one removed before the server saw it")
        XCTAssertEqual(report.blobsUploaded, 7, "6 own files and the shared one, each once")
        XCTAssertEqual(report.conflicts, 0)
        let again = try await engine.run()
        XCTAssertEqual([again.pushed, again.pulled, again.blobsUploaded], [0, 0, 0], "the outbox was emptied")
        try vault.close()

        let second = Member(name: "alice", token: alice.token, vault: h.folder.file("vault-alice-2"), folder: h.folder)
        try await second.ok(["init", "--inline-threshold", "1024"])
        try await second.ok(["remote", "set", h.server.url, "--account", "alice", "--token", alice.token])
        _ = try await second.sync()
        let received = try await second.receipts()
        XCTAssertEqual(Set(received.keys), Set(ids.prefix(6)))
        XCTAssertEqual(received[ids[0]]?["merchant"] as? String, "Latest")
        XCTAssertEqual(received[ids[5]]?["merchant"] as? String, "Other")
        let stats = try await second.ok(["stats", "--json"]).json as? [String: Any]
        XCTAssertEqual(stats?["receipts"] as? Int, 6)
        XCTAssertEqual(stats?["attachments"] as? Int, 9, "six own files and three attachments of the shared one")
        XCTAssertEqual(stats?["blobs"] as? Int, 7)
        try await second.ok(["fsck"]) // compares the kept counts with a recount too
    }
}
