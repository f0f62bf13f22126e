import BlobStore
import Foundation
@testable import ReceiptServer
import ReceiptWire
import TestSupport
import XCTest

/// The web view's receipt list over a real server catalog: filters, word search (metadata, then
/// extracted text once the server keeps it), order, paging and totals, kept current through every
/// write (a push that adds, edits or deletes a record).
final class WebQueryTests: XCTestCase {
    func id(_ n: Int) -> String { String(format: "00000000-0000-4000-8000-%012d", n) }

    func receipt(_ merchant: String, date: String?, total: String?, currency: String? = "EUR", status: String? = nil,
                 note: String? = nil, claim: String? = nil, file: String = "scan.jpg") -> WireReceipt {
        WireReceipt(merchant: merchant, date: date, total: total, currency: currency, note: note,
                    attachments: [WireAttachment(sha256: String(repeating: "a", count: 64), size: 3, filename: file,
                                                 mediaType: "image/jpeg")],
                    createdAt: 1, modifiedAt: 1, status: status, claim: claim)
    }

    func testFiltersWordsOrderAndTotalsFollowEveryWrite() async throws {
        let folder = TemporaryFolder("receipt-web-query")
        let store = try ServerCatalog(dataPath: folder.file("data"))
        defer { try? store.close() }
        let token = try store.addAccount("olga", quota: nil)
        let found = try await store.authenticate(token: token)
        let olga = try XCTUnwrap(found)
        _ = try await store.createZone(owner: "olga", name: "home", caller: olga)
        try await store.registerUploads([(try XCTUnwrap(BlobID(hex: String(repeating: "a", count: 64))), 3)], caller: olga)
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

        // Extracted text, once the server keeps it, is searched too.
        filter = WebFilter(words: ["croissant"])
        let before = try await merchants(filter)
        XCTAssertEqual(before, [])
        try await store.pool.write { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS \(ServerCatalog.blobTextTable) (sha256 TEXT NOT NULL, text TEXT)")
            try db.execute(sql: "INSERT INTO \(ServerCatalog.blobTextTable)(sha256, text) VALUES (?, 'Two CROISSANTS 4.20')",
                           arguments: [String(repeating: "a", count: 64)])
        }
        let byText = try await merchants(filter)
        XCTAssertEqual(byText, ["Cab", "Bakery", "Garage"], "every receipt with that blob matches by its text")
    }
}
