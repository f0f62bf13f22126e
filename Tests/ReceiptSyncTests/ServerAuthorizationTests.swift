import BlobStore
import Foundation
import NIOHTTP1
@testable import ReceiptServer
import GRDB
import ReceiptWire
import TestSupport
import XCTest

/// The server's authorization, probed over raw HTTP: owner alice, write participant bob, read
/// participant carol, outsider mallory.
final class ServerAuthorizationTests: XCTestCase {
    let receiptID = "0b0e6d8c-5f0a-4c44-9d6e-3f1d2a7b9c01"

    struct Setup {
        let server: TestServer
        let raw: Raw
        let tokens: [String: String]
        let blob: [UInt8]
        let blobID: String
        let folder: TemporaryFolder
    }

    /// alice uploads a blob, creates zone `household`, saves a receipt referencing it, shares the
    /// zone with bob (write) and carol (read).
    func makeSetup(limits: ServerLimits = ServerLimits()) async throws -> Setup {
        let folder = TemporaryFolder("receipt-auth")
        let data = folder.file("server")
        var tokens: [String: String] = [:]
        for name in ["alice", "bob", "carol", "mallory"] { tokens[name] = try await TestServer.addAccount(name, data: data) }
        let server = try await TestServer.start(data: data, limits: limits)
        let raw = Raw(base: server.url)
        let blob = TestData.random(300_000, seed: 7)
        let blobID = SHA256Hasher.hash(blob).hex
        let alice = tokens["alice"]
        checkEqual(try await raw.call(.PUT, "/v1/blobs/\(blobID)", token: alice, body: blob, json: false).status, 204)
        checkEqual(try await raw.call(.PUT, "/v1/zones/alice/household", token: alice).status, 201)
        let push = WirePushRequest(records: [WirePushRecord(id: receiptID, baseTag: nil, receipt: receipt([blobID: blob.count]))])
        let answer = try await raw.json(.POST, "/v1/zones/alice/household/push", token: alice, push)
        XCTAssertEqual(answer.status, 200, answer.text)
        let results = try JSONDecoder().decode(WirePushResponse.self, from: Data(answer.body)).results
        XCTAssertEqual(results.map(\.status), [.saved])
        checkEqual(try await raw.json(.PUT, "/v1/zones/alice/household/shares/bob", token: alice,
                                          WireShareRequest(role: .write)).status, 204)
        checkEqual(try await raw.json(.PUT, "/v1/zones/alice/household/shares/carol", token: alice,
                                          WireShareRequest(role: .read)).status, 204)
        return Setup(server: server, raw: raw, tokens: tokens, blob: blob, blobID: blobID, folder: folder)
    }

    func receipt(_ blobs: [String: Int], merchant: String = "Grocer") -> WireReceipt {
        WireReceipt(merchant: merchant, total: "12.34",
                    attachments: blobs.sorted(by: { $0.key < $1.key }).map {
                        WireAttachment(sha256: $0.key, size: Int64($0.value), filename: "scan.jpg", mediaType: "image/jpeg")
                    }, createdAt: 1, modifiedAt: 1)
    }

    func testNoTokenOrBadTokenIs401Everywhere() async throws {
        let s = try await makeSetup()
        let server = s.server
        defer { Task { await server.stop() } }
        let probes: [(HTTPMethod, String)] = [
            (.GET, "/v1/zones"), (.GET, "/v1/account"), (.GET, "/v1/blobs/\(s.blobID)"), (.PUT, "/v1/blobs/\(s.blobID)"),
            (.GET, "/v1/zones/alice/household/changes"), (.POST, "/v1/zones/alice/household/push"),
            (.POST, "/v1/blobs/want"), (.DELETE, "/v1/zones/alice/household"), (.POST, "/v1/blobs/bundle"),
            (.POST, "/v1/blobs/fetch"),
        ]
        let badTokens: [String?] = [nil, "", "not-a-token", String(repeating: "0", count: 64),
                                    String(s.tokens["alice"]!.dropLast()) + "x", s.tokens["alice"]!.uppercased() + "00"]
        for (method, path) in probes {
            for token in badTokens {
                let answer = try await s.raw.call(method, path, token: token, body: method == .GET ? nil : Array("{}".utf8))
                XCTAssertEqual(answer.status, 401, "\(method) \(path) with token \(token ?? "none")")
                XCTAssertFalse(answer.text.contains(s.blobID) && method == .GET && path.contains("blobs"))
            }
        }
        // A valid token works.
        let me = try await s.raw.call(.GET, "/v1/account", token: s.tokens["alice"])
        checkEqual(try JSONDecoder().decode(WireAccount.self, from: Data(me.body)), WireAccount(account: "alice", textSeq: 0))
        // Tokens are stored only as hashes.
        let sqlite = try Data(contentsOf: URL(fileURLWithPath: s.server.data + "/server.sqlite"))
        for token in s.tokens.values { XCTAssertNil(sqlite.range(of: Data(token.utf8))) }
    }

    func testOutsiderLearnsNothingByProbing() async throws {
        let s = try await makeSetup()
        let server = s.server
        defer { Task { await server.stop() } }
        let mallory = s.tokens["mallory"]
        // The blob exists, a guessed one does not: the outsider gets the same answer for both.
        let real = try await s.raw.call(.GET, "/v1/blobs/\(s.blobID)", token: mallory)
        let guessed = try await s.raw.call(.GET, "/v1/blobs/\(String(repeating: "ab", count: 32))", token: mallory)
        XCTAssertEqual(real.status, 404)
        XCTAssertEqual(guessed.status, 404)
        XCTAssertEqual(real.text.replacingOccurrences(of: s.blobID, with: "X"),
                       guessed.text.replacingOccurrences(of: String(repeating: "ab", count: 32), with: "X"))
        // Existing and guessed zones look alike; the outsider's zone list is empty.
        let zoneReal = try await s.raw.call(.GET, "/v1/zones/alice/household/changes", token: mallory)
        let zoneGuess = try await s.raw.call(.GET, "/v1/zones/alice/taxes/changes", token: mallory)
        XCTAssertEqual(zoneReal.status, 404)
        XCTAssertEqual(zoneGuess.status, 404)
        XCTAssertEqual(zoneReal.text.replacingOccurrences(of: "household", with: "X"),
                       zoneGuess.text.replacingOccurrences(of: "taxes", with: "X"))
        checkEqual(try await s.raw.call(.GET, "/v1/zones", token: mallory).text, #"{"zones":[]}"#)
        checkEqual(try await s.raw.call(.GET, "/v1/zones/alice/household/shares", token: mallory).status, 404)
        // Nor can the outsider push, share, unshare or delete the zone.
        let push = WirePushRequest(records: [WirePushRecord(id: receiptID, baseTag: nil, receipt: nil)])
        checkEqual(try await s.raw.json(.POST, "/v1/zones/alice/household/push", token: mallory, push).status, 404)
        checkEqual(try await s.raw.json(.PUT, "/v1/zones/alice/household/shares/mallory", token: mallory,
                                            WireShareRequest(role: .write)).status, 404)
        checkEqual(try await s.raw.call(.DELETE, "/v1/zones/alice/household/shares/bob", token: mallory).status, 404)
        checkEqual(try await s.raw.call(.DELETE, "/v1/zones/alice/household", token: mallory).status, 404)
        checkEqual(try await s.raw.call(.PUT, "/v1/zones/alice/mine", token: mallory).status, 403)
        // Path tricks never reach a file or another zone.
        let tricks = ["/v1/blobs/..%2F..%2Fserver.sqlite", "/v1/blobs/../server.sqlite", "/v1/blobs/\(s.blobID.uppercased())",
                      "/v1/blobs/\(s.blobID)%00", "/v1/blobs/\(s.blobID.prefix(63))", "/v1/zones/alice/..%2Fhousehold/changes",
                      "/v1/zones/%2E%2E/household/changes", "/v1/zones/alice/household%2F..%2Fx/changes",
                      "/v1/zones/alice/.hidden/changes", "/v1/blobs/%2e%2e%2fserver.sqlite"]
        for path in tricks {
            for token in [mallory, s.tokens["alice"]] {
                let answer = try await s.raw.call(.GET, path, token: token)
                XCTAssertTrue([400, 404].contains(answer.status), "\(path) answered \(answer.status)")
                XCTAssertFalse(answer.text.contains("SQLite"), path)
            }
        }
        // The owner and both participants can read the blob; the bytes are the original ones.
        for name in ["alice", "bob", "carol"] {
            let answer = try await s.raw.call(.GET, "/v1/blobs/\(s.blobID)", token: s.tokens[name])
            XCTAssertEqual(answer.status, 200, name)
            XCTAssertEqual(answer.body, s.blob, name)
        }
    }

    func testLinkingAnotherHouseholdsBlobByHashAloneIsRefused() async throws {
        let s = try await makeSetup()
        let server = s.server
        defer { Task { await server.stop() } }
        let mallory = s.tokens["mallory"]
        checkEqual(try await s.raw.call(.PUT, "/v1/zones/mallory/loot", token: mallory).status, 201)
        // The server holds the blob, but mallory never showed she has the bytes: she must upload them.
        let want = try await s.raw.json(.POST, "/v1/blobs/want", token: mallory, WireWantRequest(blobs: [s.blobID]))
        XCTAssertEqual(try JSONDecoder().decode(WireWantResponse.self, from: Data(want.body)).want, [s.blobID])
        // alice, who can read it, is not asked for it.
        let aliceWant = try await s.raw.json(.POST, "/v1/blobs/want", token: s.tokens["alice"], WireWantRequest(blobs: [s.blobID]))
        XCTAssertEqual(try JSONDecoder().decode(WireWantResponse.self, from: Data(aliceWant.body)).want, [])
        let push = WirePushRequest(records: [WirePushRecord(id: "1b0e6d8c-5f0a-4c44-9d6e-3f1d2a7b9c02", baseTag: nil,
                                                            receipt: receipt([s.blobID: s.blob.count]))])
        let answer = try await s.raw.json(.POST, "/v1/zones/mallory/loot/push", token: mallory, push)
        let results = try JSONDecoder().decode(WirePushResponse.self, from: Data(answer.body)).results
        XCTAssertEqual(results.map(\.status), [.rejected])
        XCTAssertTrue(results.first?.error?.contains("must be uploaded") ?? false)
        checkEqual(try await s.raw.call(.GET, "/v1/blobs/\(s.blobID)", token: mallory).status, 404)
        let changes = try await s.raw.call(.GET, "/v1/zones/mallory/loot/changes", token: mallory)
        XCTAssertEqual(try JSONDecoder().decode(WireChangesResponse.self, from: Data(changes.body)).records, [])
        // Uploading the bytes is proof of possession: then the record is accepted.
        checkEqual(try await s.raw.call(.PUT, "/v1/blobs/\(s.blobID)", token: mallory, body: s.blob, json: false).status, 204)
        let again = try await s.raw.json(.POST, "/v1/zones/mallory/loot/push", token: mallory, push)
        XCTAssertEqual(try JSONDecoder().decode(WirePushResponse.self, from: Data(again.body)).results.map(\.status), [.saved])
        // A size that lies about the blob is refused too.
        var lying = receipt([s.blobID: 5])
        lying.merchant = "x"
        let liar = WirePushRequest(records: [WirePushRecord(id: "2b0e6d8c-5f0a-4c44-9d6e-3f1d2a7b9c03", baseTag: nil, receipt: lying)])
        let lied = try await s.raw.json(.POST, "/v1/zones/mallory/loot/push", token: mallory, liar)
        XCTAssertEqual(try JSONDecoder().decode(WirePushResponse.self, from: Data(lied.body)).results.map(\.status), [.rejected])
    }

    func testTamperedUploadIsRejectedAndNothingKept() async throws {
        let s = try await makeSetup()
        let server = s.server
        defer { Task { await server.stop() } }
        var tampered = TestData.random(200_000, seed: 99)
        let address = SHA256Hasher.hash(tampered).hex
        tampered[1234] ^= 0xff
        let answer = try await s.raw.call(.PUT, "/v1/blobs/\(address)", token: s.tokens["bob"], body: tampered, json: false)
        XCTAssertEqual(answer.status, 422)
        XCTAssertTrue(answer.text.contains("not kept"), answer.text)
        let store = BlobStore(root: s.server.data)
        XCTAssertFalse(store.contains(BlobID(hex: address)!))
        XCTAssertEqual(try store.interimFiles().count, 0)
        let want = try await s.raw.json(.POST, "/v1/blobs/want", token: s.tokens["bob"], WireWantRequest(blobs: [address]))
        XCTAssertEqual(try JSONDecoder().decode(WireWantResponse.self, from: Data(want.body)).want, [address])
        // A record referencing it is refused: the server never keeps a record whose blobs it lacks.
        let push = WirePushRequest(records: [WirePushRecord(id: "3b0e6d8c-5f0a-4c44-9d6e-3f1d2a7b9c04", baseTag: nil,
                                                            receipt: receipt([address: 200_000]))])
        let pushed = try await s.raw.json(.POST, "/v1/zones/alice/household/push", token: s.tokens["bob"], push)
        XCTAssertEqual(try JSONDecoder().decode(WirePushResponse.self, from: Data(pushed.body)).results.map(\.status), [.rejected])
    }

    /// Uploads that arrive together, streamed into staging files at once: each one answered 204 is
    /// installed whole under its address, a tampered one among them is refused alone, and no staging
    /// file stays.
    func testConcurrentUploadsAreInstalledWholeAndATamperedOneRefusedAlone() async throws {
        let s = try await makeSetup()
        let server = s.server
        defer { Task { await server.stop() } }
        let blobs = (0..<12).map { TestData.random(150_000 + $0 * 4099, seed: 300 + UInt64($0)) }
        var tampered = TestData.random(200_000, seed: 399)
        let tamperedAddress = SHA256Hasher.hash(tampered).hex
        tampered[77] ^= 0x01
        let raw = s.raw, token = s.tokens["bob"], tamperedBody = tampered
        let statuses = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for (i, bytes) in blobs.enumerated() {
                group.addTask { (i, try await raw.call(.PUT, "/v1/blobs/\(SHA256Hasher.hash(bytes).hex)", token: token, body: bytes, json: false).status) }
            }
            group.addTask { (-1, try await raw.call(.PUT, "/v1/blobs/\(tamperedAddress)", token: token, body: tamperedBody, json: false).status) }
            var out: [Int: Int] = [:]
            for try await (i, status) in group { out[i] = status }
            return out
        }
        XCTAssertEqual(statuses[-1], 422)
        let store = BlobStore(root: s.server.data)
        for (i, bytes) in blobs.enumerated() {
            XCTAssertEqual(statuses[i], 204)
            var read: [UInt8] = []
            try store.read(SHA256Hasher.hash(bytes), encoding: .identity) { read += $0 }
            XCTAssertEqual(read, bytes)
        }
        XCTAssertFalse(store.contains(BlobID(hex: tamperedAddress)!))
        XCTAssertEqual(try store.interimFiles().count, 0)
    }

    func testRolesShareUnshareAndReadOnlyPushRefused() async throws {
        let s = try await makeSetup()
        let server = s.server
        defer { Task { await server.stop() } }
        let carol = s.tokens["carol"], bob = s.tokens["bob"]
        let zones = try JSONDecoder().decode(WireZoneList.self, from: Data(try await s.raw.call(.GET, "/v1/zones", token: carol).body))
        XCTAssertEqual(zones.zones, [WireZone(owner: "alice", name: "household", role: .read, shared: true)])
        // The read participant reads, but its push is refused with a sentence saying why.
        let changes = try await s.raw.call(.GET, "/v1/zones/alice/household/changes", token: carol)
        XCTAssertEqual(try JSONDecoder().decode(WireChangesResponse.self, from: Data(changes.body)).records.count, 1)
        let push = WirePushRequest(records: [WirePushRecord(id: "4b0e6d8c-5f0a-4c44-9d6e-3f1d2a7b9c05", baseTag: nil,
                                                            receipt: receipt([:]))])
        let refused = try await s.raw.json(.POST, "/v1/zones/alice/household/push", token: carol, push)
        XCTAssertEqual(refused.status, 403)
        XCTAssertTrue(refused.text.contains("read-only"), refused.text)
        // Participants cannot reshare.
        checkEqual(try await s.raw.json(.PUT, "/v1/zones/alice/household/shares/mallory", token: bob,
                                            WireShareRequest(role: .read)).status, 403)
        // The write participant's push is saved.
        let saved = try await s.raw.json(.POST, "/v1/zones/alice/household/push", token: bob, push)
        XCTAssertEqual(try JSONDecoder().decode(WirePushResponse.self, from: Data(saved.body)).results.map(\.status), [.saved])
        // Unshare cuts bob off from the zone and its blobs at once.
        checkEqual(try await s.raw.call(.DELETE, "/v1/zones/alice/household/shares/bob", token: s.tokens["alice"]).status, 204)
        checkEqual(try await s.raw.call(.GET, "/v1/blobs/\(s.blobID)", token: bob).status, 404)
        checkEqual(try await s.raw.call(.GET, "/v1/zones/alice/household/changes", token: bob).status, 404)
        checkEqual(try await s.raw.json(.POST, "/v1/zones/alice/household/push", token: bob, push).status, 404)
        checkEqual(try await s.raw.call(.GET, "/v1/zones", token: bob).text, #"{"zones":[]}"#)
        checkEqual(try await s.raw.call(.GET, "/v1/blobs/\(s.blobID)", token: carol).status, 200)
    }

    func testStaleTagIsConflictAndPullIsPaged() async throws {
        let s = try await makeSetup()
        let server = s.server
        defer { Task { await server.stop() } }
        let alice = s.tokens["alice"], bob = s.tokens["bob"]
        let first = try JSONDecoder().decode(WireChangesResponse.self,
                                             from: Data(try await s.raw.call(.GET, "/v1/zones/alice/household/changes", token: bob).body))
        let tag = first.records[0].changeTag
        // bob edits on the current tag; alice's later edit on the same (now stale) tag conflicts.
        let bobEdit = WirePushRequest(records: [WirePushRecord(id: receiptID, baseTag: tag,
                                                               receipt: receipt([s.blobID: s.blob.count], merchant: "Bob's"))])
        let bobAnswer = try JSONDecoder().decode(WirePushResponse.self,
                                                 from: Data(try await s.raw.json(.POST, "/v1/zones/alice/household/push", token: bob, bobEdit).body))
        XCTAssertEqual(bobAnswer.results.map(\.status), [.saved])
        let aliceEdit = WirePushRequest(records: [WirePushRecord(id: receiptID, baseTag: tag, receipt: receipt([:], merchant: "Alice's"))])
        let conflict = try JSONDecoder().decode(WirePushResponse.self,
                                                from: Data(try await s.raw.json(.POST, "/v1/zones/alice/household/push", token: alice, aliceEdit).body))
        XCTAssertEqual(conflict.results.map(\.status), [.conflict])
        XCTAssertEqual(conflict.results.first?.server?.receipt?.merchant, "Bob's")
        XCTAssertEqual(conflict.results.first?.server?.changeTag, bobAnswer.results.first?.changeTag)
        // Seven more records, pulled three at a time: every change exactly once, tokens resume.
        let more = (0..<7).map { i in
            WirePushRecord(id: String(format: "5b0e6d8c-5f0a-4c44-9d6e-3f1d2a7b9c%02d", i), baseTag: nil, receipt: receipt([:], merchant: "m\(i)"))
        }
        _ = try await s.raw.json(.POST, "/v1/zones/alice/household/push", token: alice, WirePushRequest(records: more))
        var token: String? = first.changeToken
        var seen: [String] = []
        var pages = 0
        repeat {
            let path = "/v1/zones/alice/household/changes?limit=3" + (token.map { "&since=" + $0 } ?? "")
            let page = try JSONDecoder().decode(WireChangesResponse.self, from: Data(try await s.raw.call(.GET, path, token: bob).body))
            seen += page.records.map(\.id)
            token = page.changeToken
            pages += 1
            if !page.more { break }
        } while pages < 10
        XCTAssertEqual(pages, 3)
        XCTAssertEqual(seen, [receiptID] + more.map(\.id))
        // Bounds are enforced.
        checkEqual(try await s.raw.call(.GET, "/v1/zones/alice/household/changes?limit=100000", token: bob).status, 400)
        checkEqual(try await s.raw.call(.GET, "/v1/zones/alice/household/changes?since=garbage", token: bob).status, 400)
        checkEqual(try await s.raw.call(.GET, "/v1/zones/alice/household/changes?since=0123456789abcdef.3", token: bob).status, 410)
    }

    func testBodySizeLimits() async throws {
        let s = try await makeSetup(limits: ServerLimits(maxBlobSize: 1 << 20))
        let server = s.server
        defer { Task { await server.stop() } }
        let big = TestData.random((1 << 20) + 1, seed: 3)
        let address = SHA256Hasher.hash(big).hex
        let answer = try await s.raw.call(.PUT, "/v1/blobs/\(address)", token: s.tokens["alice"], body: big, json: false)
        XCTAssertEqual(answer.status, 413)
        XCTAssertFalse(BlobStore(root: s.server.data).contains(BlobID(hex: address)!))
        let huge = [UInt8](repeating: 0x20, count: 9 << 20)
        checkEqual(try await s.raw.call(.POST, "/v1/blobs/want", token: s.tokens["alice"], body: huge).status, 413)
        let malformed = try await s.raw.call(.POST, "/v1/zones/alice/household/push", token: s.tokens["alice"], body: Array("{nope".utf8))
        XCTAssertEqual(malformed.status, 400)
        let badRecord = WirePushRequest(records: [WirePushRecord(id: receiptID, baseTag: nil,
                                                                 receipt: WireReceipt(date: "2024-13-99x", createdAt: 1, modifiedAt: 1))])
        let rejected = try await s.raw.json(.POST, "/v1/zones/alice/household/push", token: s.tokens["alice"], badRecord)
        let result = try JSONDecoder().decode(WirePushResponse.self, from: Data(rejected.body)).results.first
        XCTAssertTrue(result?.status == .rejected || result?.status == .conflict)
    }

    /// An accepted upload or push must be durable when it is answered: the server catalog's writer
    /// commits with `synchronous = FULL` (2), which GRDB's pool would otherwise lower to NORMAL.
    func testTheServerCatalogCommitsWithSynchronousFull() throws {
        let folder = TemporaryFolder("receipt-server-sync")
        let catalog = try ServerCatalog(dataPath: folder.file("server"))
        defer { try? catalog.close() }
        XCTAssertEqual(try catalog.pool.database.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }, 2)
    }

    func testServerRestartKeepsEverything() async throws {
        let s = try await makeSetup()
        await s.server.stop()
        let again = try await TestServer.start(data: s.server.data)
        defer { Task { await again.stop() } }
        let raw = Raw(base: again.url)
        let blob = try await raw.call(.GET, "/v1/blobs/\(s.blobID)", token: s.tokens["bob"])
        XCTAssertEqual(blob.status, 200)
        XCTAssertEqual(blob.body, s.blob)
        let changes = try JSONDecoder().decode(WireChangesResponse.self,
                                               from: Data(try await raw.call(.GET, "/v1/zones/alice/household/changes", token: s.tokens["carol"]).body))
        XCTAssertEqual(changes.records.map(\.id), [receiptID])
        checkEqual(try await raw.call(.GET, "/v1/blobs/\(s.blobID)", token: s.tokens["mallory"]).status, 404)
    }
}
