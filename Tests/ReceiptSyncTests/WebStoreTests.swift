import BlobStore
import Foundation
@testable import ReceiptServer
import ReceiptWire
import TestSupport
import WebForms
import XCTest

/// The web view's operations over a real server catalog — the list's filters, word search, order,
/// paging and totals, kept current through every write; passwords and sessions; server gc — run
/// here against the embedded SQLite catalog and by PostgresWebStoreTests against a real PostgreSQL.
class WebStoreTests: XCTestCase {
    var folder: TemporaryFolder!
    var stores: [any WebStore] = []

    override func setUp() async throws { folder = TemporaryFolder("receipt-web-store") }

    override func tearDown() async throws {
        for store in stores { try? await store.close() }
        stores = []
        folder = nil
    }

    /// nil for the embedded catalog, else a `postgres://` URL.
    func database() throws -> String? { nil }

    func openStore() async throws -> any WebStore {
        let opened = try await ServerDatabase(try database()).open(dataPath: folder.file("data"))
        let store = try XCTUnwrap(opened as? any WebStore)
        stores.append(store)
        return store
    }

    func id(_ n: Int) -> String { WebFixtures.id(n) }

    func receipt(_ merchant: String, date: String?, total: String?, currency: String? = "EUR", status: String? = nil,
                 note: String? = nil, claim: String? = nil, file: String = "scan.jpg") -> WireReceipt {
        WebFixtures.receipt(merchant, date: date, total: total, currency: currency, status: status, note: note, claim: claim, file: file)
    }

    func household(_ store: any WebStore) async throws -> Account { try await WebFixtures.household(store) }

    func testFiltersWordsOrderAndTotalsFollowEveryWrite() async throws {
        let store = try await openStore()
        let olga = try await household(store)
        let records = [
            WirePushRecord(id: id(1), baseTag: nil, receipt: receipt("Bakery", date: "2026-01-02", total: "1.10")),
            WirePushRecord(id: id(2), baseTag: nil, receipt: receipt("Pharmacy", date: "2026-03-01", total: "20.00",
                                                                     status: "submitted", note: "Flu shot", claim: "HSA-7")),
            WirePushRecord(id: id(3), baseTag: nil, receipt: receipt("Garage", date: nil, total: "0.90", file: "tyres.pdf")),
            WirePushRecord(id: id(4), baseTag: nil, receipt: receipt("Cab", date: "2026-02-01", total: "5.00", currency: "USD",
                                                                     status: "reimbursed")),
        ]
        let pushed = try await store.push(WirePushRequest(records: records), owner: "olga", name: "home", caller: olga)
        XCTAssertEqual(pushed.results.map(\.status), [.saved, .saved, .saved, .saved])

        func page(_ filter: WebFilter, offset: Int = 0, limit: Int = 50) async throws -> WebZonePage {
            try await store.webZonePage(owner: "olga", name: "home", filter: filter, offset: offset, limit: limit, caller: olga)
        }
        func merchants(_ filter: WebFilter) async throws -> [String] {
            try await page(filter).receipts.compactMap(\.receipt.merchant)
        }
        // Newest date first, the undated last; totals exact per currency.
        let all = try await page(WebFilter())
        XCTAssertEqual(all.receipts.compactMap(\.receipt.merchant), ["Pharmacy", "Cab", "Bakery", "Garage"])
        XCTAssertEqual(all.matching, 4)
        XCTAssertEqual(all.totals.map(\.currency), ["EUR", "USD"])
        XCTAssertEqual(all.totals.map(\.total), [Decimal(string: "22.00"), Decimal(string: "5.00")])
        let second = try await page(WebFilter(), offset: 2, limit: 2)
        XCTAssertEqual(second.receipts.compactMap(\.receipt.merchant), ["Bakery", "Garage"])
        XCTAssertEqual(second.matching, 4)

        var filter = WebFilter()
        filter.status = "none"
        let unclaimed = try await merchants(filter)
        XCTAssertEqual(unclaimed, ["Bakery", "Garage"])
        filter.status = "submitted"
        let submitted = try await merchants(filter)
        XCTAssertEqual(submitted, ["Pharmacy"])
        filter = WebFilter(words: ["flu", "hsa-7"])
        let words = try await merchants(filter)
        XCTAssertEqual(words, ["Pharmacy"], "every word, in any field, whatever the case")
        filter = WebFilter(words: ["TYRES"])
        let byFile = try await merchants(filter)
        XCTAssertEqual(byFile, ["Garage"], "an attachment's file name is searched")
        filter = WebFilter(from: "2026-01-15", to: "2026-02-28")
        let dated = try await page(filter)
        XCTAssertEqual(dated.receipts.compactMap(\.receipt.merchant), ["Cab"])
        XCTAssertEqual(dated.totals.map(\.currency), ["USD"])
        filter = WebFilter(merchant: "RMAC")
        let byMerchant = try await merchants(filter)
        XCTAssertEqual(byMerchant, ["Pharmacy"])

        // An edit and a delete through the sync path change what the list finds.
        let tags = Dictionary(uniqueKeysWithValues: pushed.results.map { ($0.id, $0.changeTag) })
        let edit = WirePushRecord(id: id(1), baseTag: tags[id(1)] ?? nil,
                                  receipt: receipt("Bakery", date: "2026-01-02", total: "1.10", status: "denied", note: "birthday cake"))
        let delete = WirePushRecord(id: id(2), baseTag: tags[id(2)] ?? nil, receipt: nil)
        let changed = try await store.push(WirePushRequest(records: [edit, delete]), owner: "olga", name: "home", caller: olga)
        XCTAssertEqual(changed.results.map(\.status), [.saved, .saved])
        filter = WebFilter(words: ["cake"])
        let edited = try await merchants(filter)
        XCTAssertEqual(edited, ["Bakery"])
        filter = WebFilter(status: "denied")
        let denied = try await merchants(filter)
        XCTAssertEqual(denied, ["Bakery"])
        let after = try await page(WebFilter())
        XCTAssertEqual(after.receipts.compactMap(\.receipt.merchant), ["Cab", "Bakery", "Garage"])
        XCTAssertEqual(after.totals.map(\.total), [Decimal(string: "2.00"), Decimal(string: "5.00")])
    }

    /// Words are found in the text a member extracted and uploaded through sync, once it is there.
    func testWordsAreFoundInTheExtractedTextOnceItReachesTheServer() async throws {
        let store = try await openStore()
        let olga = try await household(store)
        _ = try await store.push(WirePushRequest(records: [
            WirePushRecord(id: id(1), baseTag: nil, receipt: receipt("Bakery", date: "2026-01-02", total: "1.10")),
            WirePushRecord(id: id(2), baseTag: nil, receipt: receipt("Cab", date: nil, total: nil))]),
            owner: "olga", name: "home", caller: olga)
        func merchants(_ words: [String]) async throws -> [String] {
            try await store.webZonePage(owner: "olga", name: "home", filter: WebFilter(words: words), offset: 0, limit: 50,
                                        caller: olga).receipts.compactMap(\.receipt.merchant)
        }
        let before = try await merchants(["croissant"])
        XCTAssertEqual(before, [])
        try await store.putText(String(repeating: "a", count: 64), version: "test-1", WireText(text: "Two CROISSANTS 4.20", failed: nil),
                                caller: olga)
        let byText = try await merchants(["croissant"])
        XCTAssertEqual(byText, ["Bakery", "Cab"], "every receipt with that blob matches by its text")
        let mixed = try await merchants(["croissants", "cab"])
        XCTAssertEqual(mixed, ["Cab"], "one word in the text, the other in the metadata")
    }

    /// A record's document holds the texts of its own blobs: a record of the same id in another zone
    /// lends it no words (the embedded catalog's triggers once took the texts of that id in every zone).
    func testARecordsWordsAreItsZonesNotThoseOfTheSameIdElsewhere() async throws {
        let store = try await openStore()
        let olga = try await household(store)
        _ = try await store.createZone(owner: "olga", name: "work", caller: olga)
        let memo = String(repeating: "b", count: 64)
        try await store.registerUploads([(try XCTUnwrap(BlobID(hex: memo)), 3)], caller: olga)
        var office = receipt("Office", date: "2026-01-03", total: "2.00")
        office.attachments = [WireAttachment(sha256: memo, size: 3, filename: "memo.pdf", mediaType: "application/pdf")]
        _ = try await store.push(WirePushRequest(records: [WirePushRecord(id: id(1), baseTag: nil, receipt: office)]),
                                 owner: "olga", name: "work", caller: olga)
        let first = try await store.push(WirePushRequest(records: [
            WirePushRecord(id: id(1), baseTag: nil, receipt: receipt("Bakery", date: "2026-01-02", total: "1.10"))]),
            owner: "olga", name: "home", caller: olga)
        try await store.putText(memo, version: "test-1", WireText(text: "confidential merger memo", failed: nil), caller: olga)
        try await store.putText(String(repeating: "a", count: 64), version: "test-1", WireText(text: "two croissants", failed: nil),
                                caller: olga)
        // An edit rewrites the record's blob rows, and with them its document.
        _ = try await store.push(WirePushRequest(records: [
            WirePushRecord(id: id(1), baseTag: first.results.first?.changeTag,
                           receipt: receipt("Bakery", date: "2026-01-02", total: "1.10", note: "edited"))]),
            owner: "olga", name: "home", caller: olga)
        func merchants(_ zone: String, _ words: [String]) async throws -> [String] {
            try await store.webZonePage(owner: "olga", name: zone, filter: WebFilter(words: words), offset: 0, limit: 50,
                                        caller: olga).receipts.compactMap(\.receipt.merchant)
        }
        let own = try await merchants("home", ["croissants"])
        XCTAssertEqual(own, ["Bakery"])
        let lent = try await merchants("home", ["merger"])
        XCTAssertEqual(lent, [], "the other zone's record of that id lends no words")
        let there = try await merchants("work", ["merger"])
        XCTAssertEqual(there, ["Office"])
    }

    /// Every word must begin a word of the metadata, a file name or a text, case and diacritics
    /// folded; whatever a search box holds (quotes, `*`, `-`, `OR`, `NEAR`, parentheses, non-ASCII)
    /// is searched as words, never read as query syntax, and never fails.
    func testWordsMatchWordPrefixesFoldedAndNothingTypedIsQuerySyntax() async throws {
        let store = try await openStore()
        let olga = try await household(store)
        _ = try await store.push(WirePushRequest(records: [
            WirePushRecord(id: id(1), baseTag: nil, receipt: receipt("Café Crème", date: "2026-01-01", total: "4.20", note: "Straße",
                                                                     file: "IMG_0042.jpg")),
            WirePushRecord(id: id(2), baseTag: nil, receipt: receipt("Hardware Store", date: "2026-01-02", total: "31.00",
                                                                     note: "near the station", claim: "HSA-7")),
            WirePushRecord(id: id(3), baseTag: nil, receipt: receipt("Bakery", date: "2026-01-03", total: "2.10",
                                                                     note: #"(sourdough) "best" -50% OR more"#)),
            WirePushRecord(id: id(4), baseTag: nil, receipt: receipt("Книжный", date: "2026-01-04", total: "9.99", note: "ПОДАРОК")),
        ]), owner: "olga", name: "home", caller: olga)
        func merchants(_ q: String) async throws -> [String] {
            try await store.webZonePage(owner: "olga", name: "home", filter: WebFilter(words: WebSearch.words(q)), offset: 0,
                                        limit: 50, caller: olga).receipts.compactMap(\.receipt.merchant)
        }
        let all = ["Книжный", "Bakery", "Hardware Store", "Café Crème"]
        let expected: [(String, [String])] = [
            ("hard station", ["Hardware Store"]), ("caf", ["Café Crème"]), ("CAFE creme", ["Café Crème"]),
            ("straße", ["Café Crème"]), ("afe", []), ("img_0042", ["Café Crème"]), ("0042", ["Café Crème"]),
            ("hsa-7", ["Hardware Store"]), ("31.00", ["Hardware Store"]), ("31.0", ["Hardware Store"]), ("подарок", ["Книжный"]),
            ("книж", ["Книжный"]), ("hard bakery", []),
            (#""best""#, ["Bakery"]), ("(sourdough)", ["Bakery"]), ("-50", ["Bakery"]), ("OR", ["Bakery"]), ("more*", ["Bakery"]),
            ("NEAR", ["Hardware Store"]), ("NEAR(station", []), (#""unterminated"#, []), (#"a"b"#, []), ("x OR y", []),
            ("* - () ' % _ \\ \" ^", all), ("", all),
        ]
        for (q, want) in expected {
            let found = try await merchants(q)
            XCTAssertEqual(found, want, "q = \(q)")
        }
        XCTAssertEqual(WebSearch.words("a\u{0}b  c\td\ne *"), ["a", "b", "c", "d", "e"], "control characters separate words")
        XCTAssertEqual(WebSearch.words((1...12).map(String.init).joined(separator: " ")).count, 10)
    }

    /// The text of a blob finds every live receipt referencing it, whichever arrives first; a receipt
    /// deleted, moved to another zone or stripped of the blob stops matching there; a zone holding
    /// texts can be deleted.
    func testTextMatchesFollowRecordsBlobsAndZones() async throws {
        let store = try await openStore()
        let olga = try await household(store)
        let other = String(repeating: "b", count: 64)
        try await store.registerUploads([(try XCTUnwrap(BlobID(hex: other)), 3)], caller: olga)
        _ = try await store.createZone(owner: "olga", name: "work", caller: olga)
        var textless = receipt("Garage", date: "2026-02-01", total: nil)
        textless.attachments = [WireAttachment(sha256: other, size: 3, filename: "b.pdf", mediaType: "application/pdf")]
        let first = try await store.push(WirePushRequest(records: [
            WirePushRecord(id: id(1), baseTag: nil, receipt: receipt("Pharmacy", date: "2026-01-02", total: "12.00")),
            WirePushRecord(id: id(2), baseTag: nil, receipt: textless)]), owner: "olga", name: "home", caller: olga)
        var tags = Dictionary(uniqueKeysWithValues: first.results.map { ($0.id, $0.changeTag ?? "") })
        func merchants(_ zone: String, _ words: [String]) async throws -> [String] {
            try await store.webZonePage(owner: "olga", name: zone, filter: WebFilter(words: words), offset: 0, limit: 50,
                                        caller: olga).receipts.compactMap(\.receipt.merchant)
        }
        try await store.putText(String(repeating: "a", count: 64), version: "test-1",
                                WireText(text: "AMOXICILLIN 500 mg Ärztin", failed: nil), caller: olga)
        try await store.putText(other, version: "test-1", WireText(text: nil, failed: "tesseract crashed"), caller: olga)
        let byText = try await merchants("home", ["amoxi", "arztin"])
        XCTAssertEqual(byText, ["Pharmacy"], "text-only words, prefix and diacritics folded, once the text arrives")
        let mixed = try await merchants("home", ["pharm", "500"])
        XCTAssertEqual(mixed, ["Pharmacy"], "one word in the metadata, the other in the text")

        // A receipt made after the text: found by it at once (the blob's text is there already).
        _ = try await store.push(WirePushRequest(records: [
            WirePushRecord(id: id(3), baseTag: nil, receipt: receipt("Clinic", date: "2026-01-05", total: nil))]),
            owner: "olga", name: "work", caller: olga)
        let inWork = try await merchants("work", ["amoxicillin"])
        XCTAssertEqual(inWork, ["Clinic"], "each zone finds its own receipts only")

        // Edited (still with the blob): still found; moved to another zone: found there, not here.
        let edit = WirePushRecord(id: id(1), baseTag: tags[id(1)], receipt: receipt("Pharmacy", date: "2026-01-02", total: "12.50"))
        let edited = try await store.push(WirePushRequest(records: [edit]), owner: "olga", name: "home", caller: olga)
        tags[id(1)] = edited.results.first?.changeTag ?? ""
        let afterEdit = try await merchants("home", ["amoxicillin", "12.50"])
        XCTAssertEqual(afterEdit, ["Pharmacy"])
        _ = try await store.push(WirePushRequest(records: [WirePushRecord(id: id(1), baseTag: tags[id(1)], receipt: nil)]),
                                 owner: "olga", name: "home", caller: olga)
        _ = try await store.push(WirePushRequest(records: [
            WirePushRecord(id: id(1), baseTag: nil, receipt: receipt("Pharmacy", date: "2026-01-02", total: "12.50"))]),
            owner: "olga", name: "work", caller: olga)
        let moved = (try await merchants("home", ["amoxicillin"]), try await merchants("work", ["amoxicillin"]))
        XCTAssertEqual(moved.0, [], "a receipt moved out of a zone stops matching there")
        XCTAssertEqual(moved.1, ["Clinic", "Pharmacy"])

        // The blob taken off a receipt: its text no longer finds it, its metadata still does.
        let clinic = try await store.changes(owner: "olga", name: "work", since: nil, limit: 50, caller: olga)
        let clinicTag = try XCTUnwrap(clinic.records.first { $0.id == id(3) }?.changeTag)
        var bare = receipt("Clinic", date: "2026-01-05", total: nil)
        bare.attachments = []
        _ = try await store.push(WirePushRequest(records: [WirePushRecord(id: id(3), baseTag: clinicTag, receipt: bare)]),
                                 owner: "olga", name: "work", caller: olga)
        let stripped = (try await merchants("work", ["amoxicillin"]), try await merchants("work", ["clinic"]))
        XCTAssertEqual(stripped.0, ["Pharmacy"])
        XCTAssertEqual(stripped.1, ["Clinic"])
        let failed = try await merchants("home", ["tesseract"])
        XCTAssertEqual(failed, [], "an extractor's failure is no text")

        try await store.deleteZone(owner: "olga", name: "work", caller: olga)
        _ = try await store.createZone(owner: "olga", name: "work", caller: olga)
        let recreated = try await merchants("work", ["amoxicillin"])
        XCTAssertEqual(recreated, [], "a deleted zone's receipts are gone from the index")
    }

    func testPasswordsSessionsAndTheirRevocation() async throws {
        let store = try await openStore()
        let olga = try await account(store, "olga")
        await assertServerError(400) { try await store.setPassword(account: "olga", password: "short") }
        await assertServerError(404) { try await store.setPassword(account: "nobody", password: "long enough") }
        try await store.setPassword(account: "olga", password: "correct horse")
        let wrong = try await store.checkPassword(account: "olga", password: "wrong horse")
        XCTAssertNil(wrong)
        let unknown = try await store.checkPassword(account: "nobody", password: "correct horse")
        XCTAssertNil(unknown)
        let right = try await store.checkPassword(account: "olga", password: "correct horse")
        XCTAssertEqual(right?.id, olga.id)
        let first = try await store.openSession(for: olga), second = try await store.openSession(for: olga)
        let live = try await store.session(first)
        XCTAssertEqual(live?.account.name, "olga")
        XCTAssertEqual(live?.csrf.count, 64)
        let forged = try await store.session(String(repeating: "0", count: 64))
        XCTAssertNil(forged)
        try await store.closeSession(first)
        let closed = try await store.session(first)
        XCTAssertNil(closed)
        let revoked = try await store.revokeSessions(account: "olga")
        XCTAssertEqual(revoked, 1)
        let gone = try await store.session(second)
        XCTAssertNil(gone)
        let third = try await store.openSession(for: olga)
        try await store.setPassword(account: "olga", password: "another horse")
        let afterChange = try await store.session(third)
        XCTAssertNil(afterChange, "a new password ends the open sessions")
    }

    func testReceiptPagesAndZonesAnswer404ToOutsiders() async throws {
        let store = try await openStore()
        let olga = try await household(store)
        let otto = try await account(store, "otto")
        let rita = try await account(store, "rita")
        try await store.share(owner: "olga", name: "home", with: "rita", role: .read, caller: olga)
        let pushed = try await store.push(WirePushRequest(records: [
            WirePushRecord(id: id(1), baseTag: nil, receipt: receipt("Bakery", date: "2026-01-02", total: "1.10"))]),
            owner: "olga", name: "home", caller: olga)
        XCTAssertEqual(pushed.results.map(\.status), [.saved])
        let (zone, row) = try await store.webReceipt(owner: "olga", name: "home", id: id(1), caller: rita)
        XCTAssertEqual(zone.role, .read)
        XCTAssertEqual(row.receipt.merchant, "Bakery")
        await assertServerError(404) { try await store.webReceipt(owner: "olga", name: "home", id: self.id(1), caller: otto) }
        await assertServerError(404) { try await store.webZone(owner: "olga", name: "home", caller: otto) }
        await assertServerError(404) {
            try await store.webZonePage(owner: "olga", name: "home", filter: WebFilter(), offset: 0, limit: 50, caller: otto)
        }
        await assertServerError(404) { try await store.webReceipt(owner: "olga", name: "home", id: self.id(9), caller: olga) }
    }

    func testServerGCRemovesUnreferencedBlobsAndTheirThumbnails() async throws {
        let store = try await openStore()
        let olga = try await account(store, "olga")
        _ = try await store.createZone(owner: "olga", name: "home", caller: olga)
        let kept = try store.blobs.write(bytes: Array("kept".utf8), compression: .none)
        let loose = try store.blobs.write(bytes: Array("loose".utf8), compression: .none)
        try await store.registerUploads([(kept.id, kept.size), (loose.id, loose.size)], caller: olga)
        try await store.uploadsInstalled([kept.id, loose.id])
        var attached = receipt("Bakery", date: nil, total: nil)
        attached.attachments = [WireAttachment(sha256: kept.id.hex, size: kept.size, filename: "a.jpg", mediaType: "image/jpeg")]
        _ = try await store.push(WirePushRequest(records: [WirePushRecord(id: id(1), baseTag: nil, receipt: attached)]),
                                 owner: "olga", name: "home", caller: olga)
        let thumbs = folder.file("data") + "/thumbs/" + loose.id.fanOut
        try FileManager.default.createDirectory(atPath: thumbs, withIntermediateDirectories: true)
        // A PDF's page count and pages (the receipt page's preview) go with its thumbnail; the kept blob's stay.
        let made = [".png", ".pages", ".p1.png", ".p2.failed"].map { thumbs + "/" + loose.id.hex + $0 }
        for path in made { FileManager.default.createFile(atPath: path, contents: Data(path.hasSuffix(".pages") ? Array("2".utf8) : [1])) }
        let keptThumbs = folder.file("data") + "/thumbs/" + kept.id.fanOut
        try FileManager.default.createDirectory(atPath: keptThumbs, withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: keptThumbs + "/" + kept.id.hex + ".p1.png", contents: Data([1]))
        let plan = try await store.collectGarbage(graceSeconds: 0, dryRun: true)
        XCTAssertEqual(plan.blobs.map(\.sha256), [loose.id.hex])
        XCTAssertTrue(store.blobs.contains(loose.id), "a dry run removes nothing")
        let done = try await store.collectGarbage(graceSeconds: 0, dryRun: false)
        XCTAssertEqual(done.removedBlobs, 1)
        XCTAssertFalse(store.blobs.contains(loose.id))
        XCTAssertTrue(store.blobs.contains(kept.id))
        XCTAssertEqual(made.filter { FileManager.default.fileExists(atPath: $0) }, [])
        XCTAssertTrue(FileManager.default.fileExists(atPath: keptThumbs + "/" + kept.id.hex + ".p1.png"))
        let graced = try await store.collectGarbage(graceSeconds: 3600, dryRun: false)
        XCTAssertEqual(graced.removedBlobs, 0)
    }
}

/// The same, with the catalog in a real PostgreSQL (a throwaway cluster; fails when it cannot start).
final class PostgresWebStoreTests: WebStoreTests {
    var url: String?

    override func database() throws -> String? {
        if let url { return url }
        url = try PostgresCluster.shared().createDatabase()
        return url
    }

    /// The list rows, passwords and sessions are PostgreSQL tables, kept by its own trigger.
    func testTheWebTablesLiveInPostgreSQL() async throws {
        let store = try await openStore()
        let olga = try await household(store)
        _ = try await store.push(WirePushRequest(records: [
            WirePushRecord(id: id(1), baseTag: nil, receipt: receipt("Bakery", date: "2026-01-02", total: "1.10", note: "Rye"))]),
            owner: "olga", name: "home", caller: olga)
        try await store.setPassword(account: "olga", password: "correct horse")
        _ = try await store.openSession(for: olga)
        let url = try XCTUnwrap(try database())
        let rows = try PostgresCluster.shared().psql(url, """
            SELECT (SELECT words FROM web_rows) || '|' || (SELECT count(*) FROM web_sessions) || '|' ||
                   (SELECT split_part(hash, '$', 1) FROM web_passwords)
            """)
        XCTAssertEqual(rows.trimmingCharacters(in: .whitespacesAndNewlines), "bakery rye 1.10 [] scan.jpg|1|pbkdf2-sha256")
    }
}

/// Receipts and a household shared by the web store tests.
enum WebFixtures {
    static func id(_ n: Int) -> String { String(format: "00000000-0000-4000-8000-%012d", n) }

    static func receipt(_ merchant: String, date: String?, total: String?, currency: String? = "EUR", status: String? = nil,
                 note: String? = nil, claim: String? = nil, file: String = "scan.jpg") -> WireReceipt {
        WireReceipt(merchant: merchant, date: date, total: total, currency: currency, note: note,
                    attachments: [WireAttachment(sha256: String(repeating: "a", count: 64), size: 3, filename: file,
                                                 mediaType: "image/jpeg")],
                    createdAt: 1, modifiedAt: 1, status: status, claim: claim)
    }

    /// The account olga with a zone `home` and one blob registered (the one every receipt here attaches).
    static func household(_ store: any WebStore) async throws -> Account {
        let token = try await store.addAccount("olga", quota: nil)
        let found = try await store.authenticate(token: token)
        let olga = try XCTUnwrap(found)
        _ = try await store.createZone(owner: "olga", name: "home", caller: olga)
        try await store.registerUploads([(try XCTUnwrap(BlobID(hex: String(repeating: "a", count: 64))), 3)], caller: olga)
        return olga
    }
}
