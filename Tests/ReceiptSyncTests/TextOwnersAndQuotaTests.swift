import BlobStore
import Foundation
import ReceiptText
@testable import ReceiptServer
import ReceiptWire
import TestSupport
import WebForms
import XCTest

/// Storage no household can take from another or keep outside its quota (issue #30): texts are kept
/// per zone owner and only under extractor versions the server knows; texts and records count
/// against the owner's quota; and an upload's quota answer never depends on whether other zones
/// hold the same bytes. Over HTTP against a real server, on SQLite and (subclass) PostgreSQL.
class TextOwnersAndQuotaTests: HouseholdTestCase {
    static let version = TextExtractor.version

    func testOnlyTheExtractorVersionsTheServerKnowsAreKept() async throws {
        let h = try await Household.start(["alice"])
        defer { Task { await h.shutdown() } }
        let alice = API(h, "alice")
        let blob = try await alice.receipt(in: "home", bytes: TestData.random(100, seed: 1))
        // The next version a newer vault may bring, and names no extractor ever had.
        let next = String((TextExtractor.versions.compactMap { Int($0) }.max() ?? 0) + 1)
        for version in ["99", next, "evil-v9"] {
            let put = try await alice.putText(blob, version: version, "filler words")
            checkEqual(put.status, 400, put.text)
            checkTrue(put.text.contains("extractor version") && put.text.contains(version), put.text)
            let many = try await h.raw.json(.POST, "/v1/text/put", token: alice.token,
                                            WireTextPut(version: version, texts: [WireText(sha256: blob, text: "filler", failed: nil)]))
            checkEqual(many.status, 400, many.text)
            checkEqual(try await alice.want([blob], version: version), [], "a version the server does not keep is wanted for nothing")
        }
        checkEqual(try await usage(h, "alice").textBytes, 0)
        checkEqual(try await alice.putText(blob, version: Self.version, "receipt words").status, 204)
        checkEqual(try await alice.fetch([blob], version: Self.version).map(\.text), ["receipt words"])
        checkEqual(try await usage(h, "alice").textBytes, Int64("receipt words".utf8.count))
    }

    /// Alice's quota counts her zones' blobs, the texts kept for her (whoever stored them) and her
    /// records; a text or a push past it is 507 and nothing of it is kept; a deletion frees room.
    func testTextsAndRecordsCountAgainstTheZoneOwnersQuota() async throws {
        let h = try await Household.start(["alice", "bob"])
        defer { Task { await h.shutdown() } }
        let alice = API(h, "alice"), bob = API(h, "bob")
        checkEqual(try await alice.createZone("household"), 201)
        checkEqual(try await alice.share("household", with: "bob"), 204)
        let first = try await alice.receipt(in: "household", bytes: TestData.random(100, seed: 2), id: API.id(1))
        let second = try await alice.receipt(in: "household", bytes: TestData.random(100, seed: 3), id: API.id(2))
        let records = 2 * StorageUse.recordBytes(payload: try API.payload(API.receipt(first))) // same length for both
        var used = try await usage(h, "alice")
        checkEqual([used.blobBytes, used.textBytes, used.recordBytes], [200, 0, records])

        // Bob's text of alice's blob is kept for alice, and counts against her, not him.
        let text = String(repeating: "w", count: 1000)
        checkEqual(try await bob.putText(first, version: Self.version, text).status, 204)
        used = try await usage(h, "alice")
        checkEqual([used.blobBytes, used.textBytes, used.recordBytes], [200, 1000, records])
        checkEqual(try await usage(h, "bob").usedBytes, 0)

        // Ten bytes of room left: a text of 500 is refused whole, by either route, and not kept.
        try await setQuota(h, "alice", used.usedBytes + 10)
        let refused = try await bob.putText(second, version: Self.version, String(repeating: "x", count: 500))
        checkEqual(refused.status, 507, refused.text)
        checkTrue(refused.text.contains("alice") && refused.text.contains("quota"), refused.text)
        let many = try await h.raw.json(.POST, "/v1/text/put", token: bob.token, WireTextPut(version: Self.version, texts: [
            WireText(sha256: second, text: String(repeating: "x", count: 500), failed: nil)]))
        checkEqual(many.status, 507, many.text)
        checkEqual(try await alice.fetch([second], version: Self.version), [])
        checkEqual(try await usage(h, "alice").textBytes, 1000)

        // A record that grows past the quota is refused whole; deleting one frees room.
        let tags = Dictionary(uniqueKeysWithValues: try await alice.changes("household").map { ($0.id, $0.changeTag) })
        var bigger = API.receipt(second)
        bigger.note = String(repeating: "n", count: 200)
        let grown = try await bob.push("alice", "household", [WirePushRecord(id: API.id(2), baseTag: tags[API.id(2)], receipt: bigger)])
        checkEqual(grown.status, 507, grown.text)
        let deleted = try await alice.push("alice", "household", [WirePushRecord(id: API.id(1), baseTag: tags[API.id(1)], receipt: nil)])
        checkEqual(deleted.status, 200, deleted.text)
        used = try await usage(h, "alice")
        checkEqual(used.recordBytes, records / 2 + StorageUse.recordRowBytes, "a deletion marker costs its row")

        // The text of a blob no zone of alice's references any more goes at the next gc.
        let report = try await withStore(h) { try await $0.collectGarbage(graceSeconds: 86_400, dryRun: false) }
        checkEqual(report.removedTexts, 1)
        checkEqual(try await usage(h, "alice").textBytes, 0)
    }

    /// Mallory holds the same bytes as alice and stores their text first: alice's household is still
    /// asked for its own, reads and searches its own, and mallory's words never reach it.
    func testAnotherHouseholdCannotSetAReceiptsText() async throws {
        let h = try await Household.start(["alice", "bob", "mallory"])
        defer { Task { await h.shutdown() } }
        let alice = API(h, "alice"), bob = API(h, "bob"), mallory = API(h, "mallory")
        let bytes = TestData.random(100, seed: 4)
        checkEqual(try await alice.createZone("household"), 201)
        checkEqual(try await alice.share("household", with: "bob"), 204)
        let blob = try await alice.receipt(in: "household", bytes: bytes, id: API.id(1))
        checkEqual(try await mallory.receipt(in: "loot", bytes: bytes, id: API.id(2)), blob)
        let (aliceSeq, bobSeq) = (try await alice.textSeq(), try await bob.textSeq())

        checkEqual(try await mallory.putText(blob, version: Self.version, "poisoned quokka").status, 204)
        checkEqual(try await alice.textSeq(), aliceSeq, "a text alice cannot read moved her counter")
        checkEqual(try await bob.textSeq(), bobSeq)
        checkEqual(try await bob.fetch([blob], version: Self.version), [], "bob was handed mallory's text")
        checkEqual(try await bob.want([blob], version: Self.version), [blob], "alice's household has no text of its own yet")

        checkEqual(try await bob.putText(blob, version: Self.version, "sourdough roggenbrot").status, 204)
        checkEqual(try await alice.fetch([blob], version: Self.version).map(\.text), ["sourdough roggenbrot"])
        checkEqual(try await mallory.fetch([blob], version: Self.version).map(\.text), ["poisoned quokka"])
        checkEqual(try await alice.textSeq(), aliceSeq + 1)
        checkEqual(try await search(h, alice, "household", "quokka"), [])
        checkEqual(try await search(h, alice, "household", "roggenbrot"), [API.id(1)])
        checkEqual(try await search(h, mallory, "loot", "roggenbrot"), [])
        checkEqual(try await search(h, mallory, "loot", "quokka"), [API.id(2)])
    }

    /// Mallory, with no room left, uploads bytes alice's zone holds and bytes nobody holds: the same
    /// answer both times, and both count against her. Bob, who reads alice's zone, is not charged
    /// for uploading its bytes, nor after alice stops sharing it with him.
    func testTheQuotaAnswerIsTheSameWhetherOrNotOthersHoldTheBytes() async throws {
        let h = try await Household.start(["alice", "bob", "mallory"])
        defer { Task { await h.shutdown() } }
        let alice = API(h, "alice"), bob = API(h, "bob"), mallory = API(h, "mallory")
        let held = TestData.random(5000, seed: 5)
        checkEqual(try await alice.createZone("household"), 201)
        checkEqual(try await alice.share("household", with: "bob"), 204)
        _ = try await alice.receipt(in: "household", bytes: held, id: API.id(1))
        try await setQuota(h, "mallory", 1000)
        try await setQuota(h, "bob", 0)
        let elsewhere = try await mallory.upload(held)
        let nowhere = try await mallory.upload(TestData.random(5000, seed: 6))
        checkEqual(elsewhere.status, 507, elsewhere.text)
        checkEqual(nowhere.status, 507, nowhere.text)
        checkEqual(elsewhere.text, nowhere.text)
        try await setQuota(h, "mallory", nil)
        checkEqual(try await mallory.upload(held).status, 204)
        checkEqual(try await usage(h, "mallory").blobBytes, 5000, "bytes held by a zone mallory cannot read count against her")

        checkEqual(try await bob.upload(held).status, 204, "bob reads a zone holding these bytes: they are alice's")
        checkEqual(try await usage(h, "bob").blobBytes, 0)
        checkEqual(try await alice.unshare("household", with: "bob"), 204)
        checkEqual(try await usage(h, "bob").blobBytes, 0, "bob cannot remove alice's receipt: its bytes are not his to pay for")
        checkEqual(try await usage(h, "alice").blobBytes, 5000)
    }

    // MARK: Helpers

    func withStore<T>(_ h: Household, _ body: (any ServerStore) async throws -> T) async throws -> T {
        let store = try await ServerDatabase(Household.database).open(dataPath: h.server.data)
        do {
            let value = try await body(store)
            try await store.close()
            return value
        } catch {
            try? await store.close()
            throw error
        }
    }

    func usage(_ h: Household, _ account: String) async throws -> AccountSummary {
        let all = try await withStore(h) { try await $0.accounts() }
        return try XCTUnwrap(all.first { $0.account == account })
    }

    func setQuota(_ h: Household, _ account: String, _ bytes: Int64?) async throws {
        try await withStore(h) { try await $0.setQuota(account: account, bytes: bytes) }
    }

    /// The ids of the zone's receipts the web list finds for `word`.
    func search(_ h: Household, _ member: API, _ zone: String, _ word: String) async throws -> [String] {
        try await withStore(h) { store in
            let web = try XCTUnwrap(store as? any WebStore)
            let found = try await store.authenticate(token: member.token)
            let caller = try XCTUnwrap(found)
            return try await web.webZonePage(owner: caller.name, name: zone, filter: WebFilter(words: [word]), offset: 0, limit: 50,
                                             caller: caller).receipts.map(\.id)
        }
    }
}

/// The same with the server's catalog in PostgreSQL.
final class PostgresTextOwnersAndQuotaTests: TextOwnersAndQuotaTests {
    override class var postgres: Bool { true }

    /// (A test of its own also makes XCTest on Linux find the inherited ones.)
    func testTextsAreRowsPerOwnerInPostgreSQL() async throws {
        let h = try await Household.start(["alice", "mallory"])
        defer { Task { await h.shutdown() } }
        let bytes = TestData.random(100, seed: 7)
        let blob = try await API(h, "alice").receipt(in: "home", bytes: bytes, id: API.id(1))
        _ = try await API(h, "mallory").receipt(in: "home", bytes: bytes, id: API.id(1))
        checkEqual(try await API(h, "mallory").putText(blob, version: Self.version, "theirs").status, 204)
        checkEqual(try await API(h, "alice").putText(blob, version: Self.version, "ours").status, 204)
        let url = try XCTUnwrap(Household.database)
        let rows = try PostgresCluster.shared().psql(url, """
            SELECT string_agg(a.name || ':' || t.text || ':' || t.bytes, ',' ORDER BY a.name) FROM blob_texts t JOIN accounts a ON a.id = t.owner_id
            """)
        XCTAssertEqual(rows.trimmingCharacters(in: .whitespacesAndNewlines), "alice:ours:4,mallory:theirs:6")
    }
}

/// One member's raw calls to the sync API.
struct API {
    let raw: Raw
    let name: String
    let token: String

    init(_ h: Household, _ name: String) {
        (raw, self.name, token) = (h.raw, name, h[name].token)
    }

    static func id(_ n: Int) -> String { String(format: "4b0e6d8c-5f0a-4c44-9d6e-%012d", n) }

    static func receipt(_ blob: String, size: Int64 = 100) -> WireReceipt {
        WireReceipt(merchant: "Bakery", total: "4.20",
                    attachments: [WireAttachment(sha256: blob, size: size, filename: "scan.bin", mediaType: "application/octet-stream")],
                    createdAt: 1, modifiedAt: 1)
    }

    /// The record's JSON as the server stores it.
    static func payload(_ receipt: WireReceipt) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(receipt), as: UTF8.self)
    }

    func createZone(_ zone: String) async throws -> Int {
        try await raw.call(.PUT, "/v1/zones/\(name)/\(zone)", token: token).status
    }

    func share(_ zone: String, with account: String) async throws -> Int {
        try await raw.json(.PUT, "/v1/zones/\(name)/\(zone)/shares/\(account)", token: token, WireShareRequest(role: .write)).status
    }

    func unshare(_ zone: String, with account: String) async throws -> Int {
        try await raw.call(.DELETE, "/v1/zones/\(name)/\(zone)/shares/\(account)", token: token).status
    }

    func upload(_ bytes: [UInt8]) async throws -> Raw.Answer {
        try await raw.call(.PUT, "/v1/blobs/" + SHA256Hasher.hash(bytes).hex, token: token, body: bytes, json: false)
    }

    func push(_ owner: String, _ zone: String, _ records: [WirePushRecord]) async throws -> Raw.Answer {
        try await raw.json(.POST, "/v1/zones/\(owner)/\(zone)/push", token: token, WirePushRequest(records: records))
    }

    /// Uploads the bytes and saves a receipt of them in the caller's zone (created if need be); their address.
    func receipt(in zone: String, bytes: [UInt8], id: String = API.id(1)) async throws -> String {
        _ = try await createZone(zone)
        let uploaded = try await upload(bytes)
        guard uploaded.status == 204 else { throw HarnessError("upload: \(uploaded.status) \(uploaded.text)") }
        let blob = SHA256Hasher.hash(bytes).hex
        let pushed = try await push(name, zone, [WirePushRecord(id: id, baseTag: nil, receipt: Self.receipt(blob, size: Int64(bytes.count)))])
        let results = try JSONDecoder().decode(WirePushResponse.self, from: Data(pushed.body)).results
        guard results.map(\.status) == [.saved] else { throw HarnessError("push: \(pushed.text)") }
        return blob
    }

    func changes(_ zone: String) async throws -> [WireRecord] {
        let answer = try await raw.call(.GET, "/v1/zones/\(name)/\(zone)/changes", token: token)
        return try JSONDecoder().decode(WireChangesResponse.self, from: Data(answer.body)).records
    }

    func putText(_ blob: String, version: String, _ text: String) async throws -> Raw.Answer {
        try await raw.json(.PUT, "/v1/text/\(blob)/\(version)", token: token, WireText(text: text, failed: nil))
    }

    func want(_ blobs: [String], version: String) async throws -> [String] {
        let answer = try await raw.json(.POST, "/v1/text/want", token: token, WireTextRequest(version: version, blobs: blobs))
        return try JSONDecoder().decode(WireWantResponse.self, from: Data(answer.body)).want
    }

    func fetch(_ blobs: [String], version: String) async throws -> [WireText] {
        let answer = try await raw.json(.POST, "/v1/text/fetch", token: token, WireTextRequest(version: version, blobs: blobs))
        return try JSONDecoder().decode(WireTextFetchResponse.self, from: Data(answer.body)).texts
    }

    func textSeq() async throws -> Int64 {
        let answer = try await raw.call(.GET, "/v1/account", token: token)
        return try JSONDecoder().decode(WireAccount.self, from: Data(answer.body)).textSeq ?? 0
    }
}
