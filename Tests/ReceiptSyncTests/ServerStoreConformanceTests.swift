import BlobStore
import Foundation
@testable import ReceiptServer
import ReceiptWire
import TestSupport
import XCTest

/// One suite for every ServerStore: run here against the embedded SQLite catalog, and by
/// PostgresServerStoreConformanceTests (which inherits every test) against a real PostgreSQL.
class ServerStoreConformanceTests: XCTestCase {
    var folder: TemporaryFolder!
    var stores: [any ServerStore] = []

    override func setUp() async throws {
        folder = TemporaryFolder("receipt-store")
        stores = []
    }

    override func tearDown() async throws {
        for store in stores { try? await store.close() }
        stores = []
        folder = nil
    }

    /// Where the catalog lives: nil for the embedded catalog, else a `postgres://` URL.
    func database() throws -> String? { nil }

    /// A store over the test's catalog; each call opens another (as another server process would).
    func openStore(data: String? = nil) async throws -> any ServerStore {
        let store = try await ServerDatabase(try databaseOnce()).open(dataPath: data ?? folder.file("data"))
        stores.append(store)
        return store
    }

    private var chosen: String??
    private func databaseOnce() throws -> String? {
        if let chosen { return chosen }
        let made = try database()
        chosen = .some(made)
        return made
    }

    static let recordID = "4b0e6d8c-5f0a-4c44-9d6e-3f1d2a7b9c05"

    func receipt(_ merchant: String, blobs: [(String, Int64)] = []) -> WireReceipt { Self.receipt(merchant, blobs: blobs) }

    static func receipt(_ merchant: String, blobs: [(String, Int64)] = []) -> WireReceipt {
        WireReceipt(merchant: merchant, total: "12.34",
                    attachments: blobs.map { WireAttachment(sha256: $0.0, size: $0.1, filename: "scan.jpg", mediaType: "image/jpeg") },
                    createdAt: 1, modifiedAt: 1)
    }

    // MARK: Accounts and tokens

    func testAccountsAndTokensOverTheirLife() async throws {
        let store = try await openStore()
        let first = try await store.addAccount("alice", quota: nil)
        await assertServerError(409) { try await store.addAccount("alice", quota: nil) }
        await assertServerError(400) { try await store.addAccount("no/slash", quota: nil) }
        let v2 = try await store.authenticate(token: first)
        let alice = try XCTUnwrap(v2)
        XCTAssertEqual(alice.name, "alice")
        let phone = try await store.addToken(account: "alice", label: "phone")
        await assertServerError(409) { try await store.addToken(account: "alice", label: "phone") }
        await assertServerError(404) { try await store.addToken(account: "nobody", label: "phone") }
        let v3 = try await store.authenticate(token: phone)
        XCTAssertNotNil(v3)
        try await store.revokeToken(account: "alice", label: "phone")
        let revoked = try await store.authenticate(token: phone)
        XCTAssertNil(revoked)
        await assertServerError(404) { try await store.revokeToken(account: "alice", label: "phone") }
        let rotated = try await store.rotateToken(account: "alice", label: nil)
        let old = try await store.authenticate(token: first)
        XCTAssertNil(old)
        let v4 = try await store.authenticate(token: rotated)?.name
        XCTAssertEqual(v4, "alice")
        let garbage = try await store.authenticate(token: String(repeating: "0", count: 64))
        XCTAssertNil(garbage)
        try await store.setQuota(account: "alice", bytes: 1000)
        let listed = try await store.accounts()
        XCTAssertEqual(listed.map(\.account), ["alice"])
        XCTAssertEqual(listed.first?.quota, 1000)
        XCTAssertEqual(listed.first?.tokens.map(\.label), ["default"])
    }

    func testRemovingAnAccountThatSharesIsRefusedUnlessItsZonesGo() async throws {
        let store = try await openStore()
        let alice = try await account(store, "alice")
        _ = try await account(store, "bob")
        let v5 = try await store.createZone(owner: "alice", name: "household", caller: alice)
        XCTAssertTrue(v5)
        try await store.share(owner: "alice", name: "household", with: "bob", role: .write, caller: alice)
        await assertServerError(409) { try await store.removeAccount("alice", deleteZones: false) }
        let removed = try await store.removeAccount("alice", deleteZones: true)
        XCTAssertEqual(removed.deletedZones, ["household"])
        XCTAssertEqual(removed.revokedTokens, 1)
        let v6 = try await store.accounts().map(\.account)
        XCTAssertEqual(v6, ["bob"])
    }

    // MARK: Zones and shares

    func testZonesAreVisibleToOwnersAndParticipantsOnly() async throws {
        let store = try await openStore()
        let alice = try await account(store, "alice")
        let bob = try await account(store, "bob")
        let carol = try await account(store, "carol")
        let v7 = try await store.createZone(owner: "alice", name: "household", caller: alice)
        XCTAssertTrue(v7)
        let v8 = try await store.createZone(owner: "alice", name: "household", caller: alice)
        XCTAssertFalse(v8)
        await assertServerError(403) { try await store.createZone(owner: "alice", name: "other", caller: bob) }
        try await store.share(owner: "alice", name: "household", with: "bob", role: .read, caller: alice)
        try await store.share(owner: "alice", name: "household", with: "bob", role: .write, caller: alice)
        await assertServerError(404) { try await store.share(owner: "alice", name: "household", with: "zed", role: .read, caller: alice) }
        await assertServerError(400) { try await store.share(owner: "alice", name: "household", with: "alice", role: .read, caller: alice) }
        await assertServerError(403) { try await store.share(owner: "alice", name: "household", with: "carol", role: .read, caller: bob) }
        await assertServerError(404) { try await store.shares(owner: "alice", name: "household", caller: carol) }
        let v9 = try await store.shares(owner: "alice", name: "household", caller: bob)
        XCTAssertEqual(v9, [WireShare(account: "bob", role: .write)])
        let v10 = try await store.zones(for: alice)
        XCTAssertEqual(v10, [WireZone(owner: "alice", name: "household", role: .owner, shared: true)])
        let v11 = try await store.zones(for: bob)
        XCTAssertEqual(v11, [WireZone(owner: "alice", name: "household", role: .write, shared: true)])
        let v12 = try await store.zones(for: carol)
        XCTAssertEqual(v12, [])
        try await store.unshare(owner: "alice", name: "household", with: "bob", caller: alice)
        let v13 = try await store.zones(for: bob)
        XCTAssertEqual(v13, [])
        await assertServerError(404) { try await store.deleteZone(owner: "alice", name: "household", caller: bob) }
        try await store.deleteZone(owner: "alice", name: "household", caller: alice)
        let v14 = try await store.zones(for: alice)
        XCTAssertEqual(v14, [])
    }

    // MARK: Records and change tokens

    func testPushPullConflictsAndTokens() async throws {
        let store = try await openStore()
        let alice = try await account(store, "alice")
        let bob = try await account(store, "bob")
        _ = try await store.createZone(owner: "alice", name: "household", caller: alice)
        try await store.share(owner: "alice", name: "household", with: "bob", role: .read, caller: alice)
        let start = try await store.changes(owner: "alice", name: "household", since: nil, limit: 10, caller: alice)
        XCTAssertEqual(start.records, [])
        let saved = try await store.push(WirePushRequest(records: [
            WirePushRecord(id: Self.recordID, baseTag: nil, receipt: receipt("Grocer")),
            WirePushRecord(id: "not-a-uuid", baseTag: nil, receipt: receipt("Grocer")),
        ]), owner: "alice", name: "household", caller: alice)
        XCTAssertEqual(saved.results.map(\.status), [.saved, .rejected])
        let tag = try XCTUnwrap(saved.results[0].changeTag)
        let stale = try await store.push(WirePushRequest(records: [WirePushRecord(id: Self.recordID, baseTag: "0000", receipt: receipt("Other"))]),
                                         owner: "alice", name: "household", caller: alice)
        XCTAssertEqual(stale.results.first?.status, .conflict)
        XCTAssertEqual(stale.results.first?.server?.changeTag, tag)
        XCTAssertEqual(stale.results.first?.server?.receipt?.merchant, "Grocer")
        await assertServerError(403) {
            try await store.push(WirePushRequest(records: [WirePushRecord(id: Self.recordID, baseTag: tag, receipt: nil)]),
                                 owner: "alice", name: "household", caller: bob)
        }
        let pulled = try await store.changes(owner: "alice", name: "household", since: start.changeToken, limit: 10, caller: bob)
        XCTAssertEqual(pulled.records, [WireRecord(id: Self.recordID, changeTag: tag, receipt: receipt("Grocer"))])
        XCTAssertGreaterThan(try sequence(pulled.changeToken), try sequence(start.changeToken))
        let deleted = try await store.push(WirePushRequest(records: [WirePushRecord(id: Self.recordID, baseTag: tag, receipt: nil)]),
                                           owner: "alice", name: "household", caller: alice)
        XCTAssertEqual(deleted.results.first?.status, .saved)
        let after = try await store.changes(owner: "alice", name: "household", since: pulled.changeToken, limit: 10, caller: alice)
        XCTAssertEqual(after.records.map(\.deleted), [true])
        XCTAssertGreaterThan(try sequence(after.changeToken), try sequence(pulled.changeToken))
        await assertServerError(400) { try await store.changes(owner: "alice", name: "household", since: "garbage", limit: 10, caller: alice) }
        await assertServerError(410) { try await store.changes(owner: "alice", name: "household", since: "feedfeedfeedfeed.1", limit: 10, caller: alice) }
        await assertServerError(404) { try await store.changes(owner: "alice", name: "nothing", since: nil, limit: 10, caller: alice) }
    }

    func testPagesOfChangesEndWithTheZonesToken() async throws {
        let store = try await openStore()
        let alice = try await account(store, "alice")
        _ = try await store.createZone(owner: "alice", name: "household", caller: alice)
        let ids = (0..<5).map { String(format: "4b0e6d8c-5f0a-4c44-9d6e-3f1d2a7b9c%02d", $0) }
        _ = try await store.push(WirePushRequest(records: ids.map { WirePushRecord(id: $0, baseTag: nil, receipt: receipt("Shop")) }),
                                 owner: "alice", name: "household", caller: alice)
        var since: String?
        var seen: [String] = []
        var pages = 0
        repeat {
            let page = try await store.changes(owner: "alice", name: "household", since: since, limit: 2, caller: alice)
            seen += page.records.map(\.id)
            since = page.changeToken
            pages += 1
            if !page.more { break }
        } while pages < 10
        XCTAssertEqual(seen, ids)
        XCTAssertEqual(pages, 3)
    }

    // MARK: Blobs and quotas

    func testBlobsNeedAProvedUploadAndCountAgainstTheQuota() async throws {
        let store = try await openStore()
        let alice = try await account(store, "alice")
        let bob = try await account(store, "bob")
        _ = try await store.createZone(owner: "alice", name: "household", caller: alice)
        let bytes = TestData.random(300, seed: 1)
        let id = try XCTUnwrap(BlobID(hex: TestData.sha256(bytes)))
        let v15 = try await store.want([id.hex], caller: alice)
        XCTAssertEqual(v15, [id.hex])
        await assertServerError(400) { try await store.want(["xyz"], caller: alice) }
        let early = try await store.push(WirePushRequest(records: [WirePushRecord(id: Self.recordID, baseTag: nil, receipt: receipt("A", blobs: [(id.hex, 300)]))]),
                                         owner: "alice", name: "household", caller: alice)
        XCTAssertEqual(early.results.first?.status, .rejected)
        // The bytes go into the store as a server installs them: recorded first, then the file.
        try await store.registerUploads([(id: id, size: 300)], caller: alice)
        let incoming = try store.blobs.incoming()
        try bytes.withUnsafeBytes { try incoming.append($0) }
        _ = try store.blobs.install([try incoming.finish(expected: id)])
        let v16 = try await store.want([id.hex], caller: alice)
        XCTAssertEqual(v16, [])
        let v17 = try await store.want([id.hex], caller: bob)
        XCTAssertEqual(v17, [id.hex], "knowing an address is not possession")
        let wrongSize = try await store.push(WirePushRequest(records: [WirePushRecord(id: Self.recordID, baseTag: nil, receipt: receipt("A", blobs: [(id.hex, 301)]))]),
                                             owner: "alice", name: "household", caller: alice)
        XCTAssertEqual(wrongSize.results.first?.status, .rejected)
        let saved = try await store.push(WirePushRequest(records: [WirePushRecord(id: Self.recordID, baseTag: nil, receipt: receipt("A", blobs: [(id.hex, 300)]))]),
                                         owner: "alice", name: "household", caller: alice)
        XCTAssertEqual(saved.results.first?.status, .saved)
        let v18 = try await store.readableBlobSizes([id], caller: alice)
        XCTAssertEqual(v18, [300])
        let v19 = try await store.readableBlobSizes([id], caller: bob)
        XCTAssertEqual(v19, [nil])
        let v20 = try await store.accounts().first { $0.account == "alice" }?.blobBytes
        XCTAssertEqual(v20, 300)
        // Bob's quota is smaller than his upload: refused, and nothing of it recorded.
        try await store.setQuota(account: "bob", bytes: 100)
        let other = TestData.random(200, seed: 2)
        let otherID = try XCTUnwrap(BlobID(hex: TestData.sha256(other)))
        await assertServerError(507) { try await store.registerUploads([(id: otherID, size: 200)], caller: bob) }
        let v21 = try await store.accounts().first { $0.account == "bob" }?.usedBytes
        XCTAssertEqual(v21, 0)
    }

    // MARK: Text counters

    /// Two stores over one catalog (as two server processes), alice's zone "household", bob and carol.
    func textHousehold() async throws -> (any ServerStore, any ServerStore, Account, Account, Account) {
        let store = try await openStore()
        let other = try await openStore()
        let alice = try await account(store, "alice")
        let bob = try await account(store, "bob")
        let carol = try await account(store, "carol")
        _ = try await store.createZone(owner: "alice", name: "household", caller: alice)
        return (store, other, alice, bob, carol)
    }

    /// Uploads 100 random bytes of `seed` as a server installs them: recorded first, then the file.
    func upload(_ store: any ServerStore, seed: Int, caller: Account) async throws -> BlobID {
        let bytes = TestData.random(100, seed: UInt64(seed))
        let id = try XCTUnwrap(BlobID(hex: TestData.sha256(bytes)))
        try await store.registerUploads([(id: id, size: 100)], caller: caller)
        let incoming = try store.blobs.incoming()
        try bytes.withUnsafeBytes { try incoming.append($0) }
        _ = try store.blobs.install([try incoming.finish(expected: id)])
        return id
    }


    /// A stored text moves the counter of every account that can read its blob, once (a text kept
    /// already moves nothing); sharing a zone moves the participant's. Texts stored at once through
    /// two stores (two processes) each move it exactly once.
    func testTextCountersMoveWithEachStoredTextForItsReaders() async throws {
        let (store, other, alice, bob, carol) = try await textHousehold()
        var blobs: [String] = []
        for seed in 1...2 {
            let id = try await upload(store, seed: seed, caller: alice)
            let recordID = String(Self.recordID.dropLast()) + String(seed)
            let saved = try await store.push(WirePushRequest(records: [WirePushRecord(id: recordID, baseTag: nil,
                                                                                      receipt: receipt("A", blobs: [(id.hex, 100)]))]),
                                             owner: "alice", name: "household", caller: alice)
            XCTAssertEqual(saved.results.first?.status, .saved)
            blobs.append(id.hex)
        }
        func counters() async throws -> [Int64] {
            [try await store.textSequence(caller: alice), try await store.textSequence(caller: bob),
             try await store.textSequence(caller: carol)]
        }
        let v1 = try await counters()
        XCTAssertEqual(v1, [0, 0, 0])
        try await store.share(owner: "alice", name: "household", with: "bob", role: .read, caller: alice)
        let v2 = try await counters()
        XCTAssertEqual(v2, [0, 1, 0])
        try await store.putText(blobs[0], version: "1", WireText(text: "hinges", failed: nil), caller: alice)
        let v3 = try await counters()
        XCTAssertEqual(v3, [1, 2, 0])
        try await store.putText(blobs[0], version: "1", WireText(text: "kept already", failed: nil), caller: bob)
        let v4 = try await counters()
        XCTAssertEqual(v4, [1, 2, 0], "a text the server has moves nothing")
        await assertServerError(404) { try await store.putText(blobs[0], version: "2", WireText(text: "x", failed: nil), caller: carol) }
        // 20 texts through two stores at once: 20 moves, none lost, no deadlock between them.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for version in 2...11 {
                for (i, blob) in blobs.enumerated() {
                    let target = i == 0 ? store : other
                    group.addTask { try await target.putText(blob, version: "\(version)", WireText(text: "t", failed: nil), caller: alice) }
                }
            }
            try await group.waitForAll()
        }
        let v5 = try await counters()
        XCTAssertEqual(v5, [21, 22, 0])
    }

    /// Many texts in one upload (`POST /v1/text/put`): each kept unless one is there already, those of
    /// blobs the caller cannot read refused by address, and each reader's counter moved once for the
    /// upload. Two uploads of the same texts at once, in opposite orders through two stores, neither
    /// deadlock nor both count.
    func testManyTextsInOneUploadMoveEachReadersCounterOnce() async throws {
        let (store, other, alice, bob, carol) = try await textHousehold()
        try await store.share(owner: "alice", name: "household", with: "bob", role: .read, caller: alice)
        var records: [WirePushRecord] = []
        var blobs: [String] = []
        for seed in 1...3 {
            let id = try await upload(store, seed: seed, caller: alice)
            records.append(WirePushRecord(id: String(Self.recordID.dropLast()) + String(seed), baseTag: nil,
                                          receipt: receipt("A", blobs: [(id.hex, 100)])))
            blobs.append(id.hex)
        }
        _ = try await store.push(WirePushRequest(records: records), owner: "alice", name: "household", caller: alice)
        func counters() async throws -> [Int64] {
            [try await store.textSequence(caller: alice), try await store.textSequence(caller: bob),
             try await store.textSequence(caller: carol)]
        }
        let before = try await counters()
        let unknown = String(repeating: "e", count: 64)
        let refused = try await store.putTexts([WireText(sha256: blobs[0], text: "hinges", failed: nil),
                                                WireText(sha256: blobs[1], text: nil, failed: "tesseract crashed"),
                                                WireText(sha256: unknown, text: "nobody's", failed: nil),
                                                WireText(sha256: blobs[2], text: "screws", failed: nil)], version: "1", caller: alice)
        XCTAssertEqual(refused, [unknown])
        let after = try await counters()
        XCTAssertEqual(after, [before[0] + 1, before[1] + 1, before[2]], "one move per reader for the whole upload")
        let kept = try await store.texts(blobs, version: "1", caller: bob, byteLimit: 1 << 20).texts
        XCTAssertEqual(kept, [WireText(sha256: blobs[0], text: "hinges", failed: nil),
                              WireText(sha256: blobs[1], text: nil, failed: "tesseract crashed"),
                              WireText(sha256: blobs[2], text: "screws", failed: nil)])
        // The first text stays, and an upload that keeps nothing moves nothing.
        let again = try await store.putTexts([WireText(sha256: blobs[0], text: "replaced", failed: nil)], version: "1", caller: bob)
        XCTAssertEqual(again, [])
        let first = try await store.texts([blobs[0]], version: "1", caller: alice, byteLimit: 1 << 20).texts.first?.text
        XCTAssertEqual(first, "hinges")
        let unchanged = try await counters()
        XCTAssertEqual(unchanged, after)
        // A caller who cannot read the blobs keeps nothing.
        let theirs = try await store.putTexts(blobs.map { WireText(sha256: $0, text: "x", failed: nil) }, version: "2", caller: carol)
        XCTAssertEqual(theirs.sorted(), blobs.sorted())
        let none = try await store.texts(blobs, version: "2", caller: alice, byteLimit: 1 << 20).texts
        XCTAssertEqual(none, [])
        // The same three texts from two stores at once, in opposite orders, for ten versions.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for version in 3...12 {
                for (target, order) in [(store, blobs), (other, Array(blobs.reversed()))] {
                    group.addTask {
                        _ = try await target.putTexts(order.map { WireText(sha256: $0, text: "t\(version)", failed: nil) },
                                                      version: "\(version)", caller: alice)
                    }
                }
            }
            try await group.waitForAll()
        }
        let end = try await counters()
        XCTAssertEqual(end, [after[0] + 10, after[1] + 10, after[2]])
    }

    // MARK: Several processes on one catalog

    /// Two stores over one catalog (as two server processes): concurrent pushes to one zone get
    /// distinct, strictly increasing change tokens and one linear history; a stale tag is a conflict
    /// whichever store sees it.
    func testTwoStoresOnOneCatalogKeepOneLinearHistory() async throws {
        let first = try await openStore()
        let second = try await openStore()
        let alice = try await account(first, "alice")
        _ = try await first.createZone(owner: "alice", name: "household", caller: alice)
        let stores = [first, second]
        let tokens = try await withThrowingTaskGroup(of: [Int64].self) { group in
            for worker in 0..<4 {
                group.addTask {
                    var seen: [Int64] = []
                    for n in 0..<10 {
                        let id = String(format: "4b0e6d8c-5f0a-4c44-9d6e-%012d", worker * 100 + n)
                        let store = stores[(worker + n) % 2]
                        let answer = try await store.push(WirePushRequest(records: [WirePushRecord(id: id, baseTag: nil, receipt: Self.receipt("S"))]),
                                                          owner: "alice", name: "household", caller: alice)
                        XCTAssertEqual(answer.results.first?.status, .saved)
                        let page = try await store.changes(owner: "alice", name: "household", since: nil, limit: 1000, caller: alice)
                        seen.append(try Self.sequence(page.changeToken))
                    }
                    return seen
                }
            }
            var all: [[Int64]] = []
            for try await seen in group { all.append(seen) }
            return all
        }
        for seen in tokens { XCTAssertEqual(seen, seen.sorted(), "a worker saw the zone's token go back") }
        let history = try await second.changes(owner: "alice", name: "household", since: nil, limit: 1000, caller: alice)
        XCTAssertEqual(history.records.count, 40)
        XCTAssertEqual(try sequence(history.changeToken), 40, "one sequence number per saved record, none lost or reused")
        // A tag made stale through one store is a conflict through the other.
        let record = try XCTUnwrap(history.records.first)
        let update = try await first.push(WirePushRequest(records: [WirePushRecord(id: record.id, baseTag: record.changeTag, receipt: receipt("T"))]),
                                          owner: "alice", name: "household", caller: alice)
        XCTAssertEqual(update.results.first?.status, .saved)
        let stale = try await second.push(WirePushRequest(records: [WirePushRecord(id: record.id, baseTag: record.changeTag, receipt: receipt("U"))]),
                                          owner: "alice", name: "household", caller: alice)
        XCTAssertEqual(stale.results.first?.status, .conflict)
    }

    func sequence(_ token: String) throws -> Int64 { try Self.sequence(token) }

    static func sequence(_ token: String) throws -> Int64 {
        try XCTUnwrap(token.split(separator: ".").last.flatMap { Int64($0) }, "change token \(token)")
    }
}

/// The same suite against a real PostgreSQL (a throwaway cluster started by the test process).
final class PostgresServerStoreConformanceTests: ServerStoreConformanceTests {
    override func database() throws -> String? { try PostgresCluster.shared().createDatabase() }

    func testADatabaseOfANewerReceiptIsRefusedUntouched() async throws {
        let url = try XCTUnwrap(try database())
        let store = try await ServerDatabase(url).open(dataPath: folder.file("data"))
        try await store.close()
        let cluster = try PostgresCluster.shared()
        let current = try XCTUnwrap(Int(try cluster.psql(url, "SELECT version FROM receipt_schema").trimmingCharacters(in: .whitespacesAndNewlines)))
        try cluster.psql(url, "UPDATE receipt_schema SET version = version + 1")
        do {
            let opened = try await ServerDatabase(url).open(dataPath: folder.file("data"))
            try? await opened.close()
            XCTFail("a database of a newer schema version was opened")
        } catch let error as ServerError {
            XCTAssertTrue(error.message.contains("newer"), error.message)
        }
        XCTAssertEqual(try cluster.psql(url, "SELECT version FROM receipt_schema").trimmingCharacters(in: .whitespacesAndNewlines), "\(current + 1)")
    }

    func testAnUnreachableDatabaseIsOneClearError() async throws {
        let port = try PostgresCluster.freePort()
        do {
            let store = try await ServerDatabase("postgres://receipt@127.0.0.1:\(port)/none").open(dataPath: folder.file("data"))
            try? await store.close()
            XCTFail("opened a database nobody serves")
        } catch let error as ServerError {
            XCTAssertTrue(error.message.contains("postgres://receipt@127.0.0.1:\(port)/none"), error.message)
        }
    }

    func testAUnixSocketFolderIsAHost() async throws {
        let cluster = try PostgresCluster.shared()
        let tcp = try XCTUnwrap(try database())
        let name = String(tcp.split(separator: "/").last ?? "")
        let folderHost = cluster.folder.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? cluster.folder
        let url = "postgres://\(cluster.user)@\(folderHost):\(cluster.port)/\(name)"
        XCTAssertEqual(try PostgresURL(url).host, cluster.folder)
        let store = try await ServerDatabase(url).open(dataPath: folder.file("data"))
        let token = try await store.addAccount("alice", quota: nil)
        let found = try await store.authenticate(token: token)
        XCTAssertEqual(found?.name, "alice")
        try await store.close()
    }

    func testBadDatabaseURLsAreRefused() throws {
        for bad in ["mysql://u@h/db", "postgres://h/db", "postgres://u@h/", "postgres://u@h:99999/db"] {
            XCTAssertThrowsError(try ServerDatabase(bad), bad)
        }
        XCTAssertEqual(try ServerDatabase("postgres://u:secret@db.example:6543/receipts"),
                       .postgres(try PostgresURL("postgresql://u:secret@db.example:6543/receipts")))
    }
}
