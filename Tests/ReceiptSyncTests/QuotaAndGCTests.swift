import AsyncHTTPClient
import BlobStore
import Foundation
import NIOCore
import ReceiptServer
import TestSupport
import XCTest

/// Quotas (the blobs of an owner's zones count against the owner; an upload or push past the quota
/// is 507 and the vault keeps its change pending) and the server's gc (unreferenced blobs cost their
/// uploader quota until gc reclaims them; the grace and uploads in flight are spared).
final class QuotaAndGCTests: XCTestCase {
    func server(_ h: Household, _ args: [String]) async throws -> CLI.Result {
        try await CLI.run(["server"] + args + ["--data", h.server.data], in: h.folder)
    }

    /// The bytes of the blobs counted against the account (its texts and records count too: TextOwnersAndQuotaTests).
    func used(_ h: Household, _ account: String) async throws -> Int64? {
        let list = try await server(h, ["account-list", "--json"])
        let entry = (list.json as? [[String: Any]])?.first { $0["account"] as? String == account }
        return (entry?["blobBytes"] as? NSNumber)?.int64Value
    }

    func testOverQuotaIsRefusedWith507AndTheChangeStaysPending() async throws {
        let h = try await Household.start(["alice", "bob"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"], bob = h["bob"]
        checkEqual(try await server(h, ["account-quota", "alice", "300KB"]).status, 0)
        try await alice.ok(["zone", "create", "household"])
        try await alice.ok(["share", "household", "bob", "--role", "write"])
        try await alice.ok(["import", try h.file("one.jpg", size: 200_000, seed: 1).path, "--zone", "household"])
        let first = try await alice.sync()
        XCTAssertEqual(first["pushed"] as? Int, 1)
        checkEqual(try await used(h, "alice"), 200_000)

        // A second 200 KB does not fit in 300 KB: exit 1 naming the quota, and nothing is lost.
        let second = try h.file("two.jpg", size: 200_000, seed: 2)
        try await alice.ok(["import", second.path, "--zone", "household"])
        let refused = try await alice.run(["sync"])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("quota"), refused.stderr)
        checkEqual(try await used(h, "alice"), 200_000)
        let raw = try await h.raw.call(.PUT, "/v1/blobs/" + second.sha256, token: alice.token,
                                       body: TestData.random(200_000, seed: 2), json: false)
        XCTAssertEqual(raw.status, 507, raw.text)

        // Shared data counts against the zone's owner: bob's receipt in alice's zone is refused too.
        _ = try await bob.sync()
        try await bob.ok(["import", try h.file("bob.jpg", size: 150_000, seed: 3).path, "--zone", "alice/household"])
        let bobRefused = try await bob.run(["sync"])
        XCTAssertEqual(bobRefused.status, 1)
        XCTAssertTrue(bobRefused.stderr.contains("quota") && bobRefused.stderr.contains("alice"), bobRefused.stderr)

        checkEqual(try await server(h, ["account-quota", "alice", "1MB", "--json"]).status, 0)
        let resumed = try await alice.sync()
        XCTAssertEqual(resumed["pushed"] as? Int, 1, "the refused change must have stayed pending")
        let bobResumed = try await bob.sync()
        XCTAssertEqual(bobResumed["pushed"] as? Int, 1)
        checkEqual(try await used(h, "alice"), 550_000)
        checkEqual(try await used(h, "bob"), 0, "bob's blob is referenced by alice's zone: it counts against alice")
        try await alice.ok(["cat", second.sha256])
    }

    func testUnreferencedUploadsCostQuotaUntilServerGCReclaimsThem() async throws {
        let h = try await Household.start(["alice", "bob"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"], bob = h["bob"]
        let kept = try h.file("kept.pdf", size: 120_000, seed: 4)
        try await alice.ok(["import", kept.path])
        _ = try await alice.sync()
        let stray = TestData.random(50_000, seed: 5)
        let strayHex = SHA256Hasher.hash(stray).hex
        let put = try await h.raw.call(.PUT, "/v1/blobs/" + strayHex, token: bob.token, body: stray, json: false)
        XCTAssertEqual(put.status, 204, put.text)
        checkEqual(try await used(h, "bob"), 50_000, "a blob nothing references costs its uploader")
        let strayFile = h.server.data + "/blobs/" + String(strayHex.prefix(2)) + "/" + strayHex
        XCTAssertTrue(FileManager.default.fileExists(atPath: strayFile))

        // Within the default grace (24 h) nothing goes.
        let spared = try await server(h, ["gc", "--json"])
        XCTAssertEqual(spared.status, 0, spared.stderr)
        XCTAssertEqual((spared.json as? [String: Any])?["removedBlobs"] as? Int, 0)
        let dry = try await server(h, ["gc", "--grace", "0", "--dry-run", "--json"])
        let dryReport = try XCTUnwrap(dry.json as? [String: Any])
        XCTAssertEqual(dryReport["removedBlobs"] as? Int, 1)
        XCTAssertEqual(dryReport["reclaimedBytes"] as? Int, 50_000)
        XCTAssertEqual(dryReport["dryRun"] as? Bool, true)
        XCTAssertTrue(FileManager.default.fileExists(atPath: strayFile))

        // While the server runs: an upload in flight when gc runs is installed whole afterwards.
        let late = TestData.random(80_000, seed: 6)
        let lateHex = SHA256Hasher.hash(late).hex
        let (pieces, feed) = AsyncStream.makeStream(of: ByteBuffer.self)
        var request = HTTPClientRequest(url: h.server.url + "/v1/blobs/" + lateHex)
        request.method = .PUT
        request.headers.add(name: "Authorization", value: "Bearer \(bob.token)")
        request.body = .stream(pieces, length: .known(Int64(late.count)))
        let upload = Task { try await HTTPClient.shared.execute(request, timeout: .seconds(60)).status.code }
        feed.yield(ByteBuffer(bytes: late[..<40_000]))
        // Wait until the server is writing it (its staging file exists), then collect.
        let deadline = Date().addingTimeInterval(30)
        while (try? FileManager.default.contentsOfDirectory(atPath: h.server.data + "/interim"))?.isEmpty ?? true, Date() < deadline {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        let collected = try await server(h, ["gc", "--grace", "0", "--json"])
        XCTAssertEqual(collected.status, 0, collected.stderr)
        let report = try XCTUnwrap(collected.json as? [String: Any])
        XCTAssertEqual(report["removedBlobs"] as? Int, 1)
        XCTAssertEqual(report["reclaimedBytes"] as? Int, 50_000)
        XCTAssertEqual(report["dryRun"] as? Bool, false)
        XCTAssertFalse(FileManager.default.fileExists(atPath: strayFile))
        feed.yield(ByteBuffer(bytes: late[40_000...]))
        feed.finish()
        checkEqual(try await upload.value, 204)
        XCTAssertTrue(FileManager.default.fileExists(atPath: h.server.data + "/blobs/" + String(lateHex.prefix(2)) + "/" + lateHex))
        checkEqual(try await used(h, "bob"), 80_000)

        // What records reference stays: a new vault of alice's gets the bytes back.
        let again = Member(name: "alice", token: alice.token, vault: h.folder.file("vault-alice-2"), folder: h.folder)
        try await again.ok(["init"])
        try await again.ok(["remote", "set", h.server.url, "--account", "alice", "--token", alice.token])
        _ = try await again.sync()
        try await again.ok(["cat", kept.sha256])
    }

    /// gc run at the worst instant of an upload: after its bookkeeping record, before the install.
    /// With any grace (0 here) the blob survives, both a new one and one the server held unreferenced.
    func testGCBetweenAnUploadsRecordAndItsInstallSparesTheBlob() async throws {
        let folder = TemporaryFolder("receipt-gc-race")
        let data = folder.file("server")
        let token = try await TestServer.addAccount("alice", data: data)
        let opened = try await ServerDatabase.embedded.open(dataPath: data)
        let catalog = try XCTUnwrap(opened as? ServerCatalog)
        let found = try await catalog.authenticate(token: token)
        let alice = try XCTUnwrap(found)
        let bytes = TestData.random(30_000, seed: 9)
        for round in ["new", "held unreferenced"] {
            let incoming = try catalog.blobs.incoming()
            try bytes.withUnsafeBytes { try incoming.append($0) }
            let staged = try incoming.finishAddressedByContent()
            try await catalog.registerUploads([(staged.id, staged.size)], caller: alice)
            // A grace of 0 takes what was touched up to gc's millisecond, so without the
            // reservation this gc would take the blob whether or not the clock ticked meanwhile.
            let report = try await catalog.collectGarbage(graceSeconds: 0, dryRun: false)
            XCTAssertEqual(report.removedBlobs, 0, "\(round): gc took a blob between its record and its install")
            _ = try catalog.blobs.install([staged])
            try await catalog.uploadsInstalled([staged.id])
            XCTAssertTrue(catalog.blobs.contains(staged.id), round)
            checkEqual(try await catalog.want([staged.id.hex], caller: alice), [], "\(round): the server lost the blob's record")
        }
        try catalog.close()
    }
}
