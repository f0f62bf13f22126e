import ReceiptSync
import ReceiptWire
import XCTest

/// The 3-way merge rule (docs/PROTOCOL.md, "Conflicts"), on its own.
final class MergeTests: XCTestCase {
    func r(_ merchant: String?, note: String? = nil, tags: [String] = [], files: [String] = [], at: Int64 = 10) -> WireReceipt {
        WireReceipt(merchant: merchant, note: note, tags: tags,
                    attachments: files.map { WireAttachment(sha256: String(repeating: $0, count: 64), size: 1, filename: $0, mediaType: "x") },
                    createdAt: 1, modifiedAt: at)
    }

    func testDifferentFieldsBothKept() {
        let base = r("Shop", note: nil)
        let merged = ReceiptMerge.merge(base: base, local: r("Shop", note: "mine", at: 20), server: r("Better Shop", at: 30))
        XCTAssertEqual(merged?.merchant, "Better Shop")
        XCTAssertEqual(merged?.note, "mine")
        XCTAssertEqual(merged?.modifiedAt, 30)
    }

    func testSameFieldLaterEditWinsThenGreaterValue() {
        let base = r("Shop")
        XCTAssertEqual(ReceiptMerge.merge(base: base, local: r("Local", at: 50), server: r("Server", at: 40))?.merchant, "Local")
        XCTAssertEqual(ReceiptMerge.merge(base: base, local: r("Local", at: 40), server: r("Server", at: 50))?.merchant, "Server")
        // A tie is broken by value, so both orders give the same answer.
        XCTAssertEqual(ReceiptMerge.merge(base: base, local: r("Aaa", at: 40), server: r("Zzz", at: 40))?.merchant, "Zzz")
        XCTAssertEqual(ReceiptMerge.merge(base: base, local: r("Zzz", at: 40), server: r("Aaa", at: 40))?.merchant, "Zzz")
    }

    func testClaimFieldsMergeFieldByField() {
        let base = r("Shop")
        var local = r("Shop", at: 20)
        local.status = "submitted"
        local.claim = "HSA-1"
        var server = r("Shop", at: 30)
        server.reimbursedOn = "2025-04-02"
        let merged = ReceiptMerge.merge(base: base, local: local, server: server)
        XCTAssertEqual(merged?.status, "submitted")
        XCTAssertEqual(merged?.claim, "HSA-1")
        XCTAssertEqual(merged?.reimbursedOn, "2025-04-02")
        var bad = r("Shop")
        bad.status = "paid"
        XCTAssertNotNil(bad.validationError())
    }

    func testTagsAndAttachmentsMergeAsSets() {
        let base = r("S", tags: ["a", "b"], files: ["1", "2"])
        let local = r("S", tags: ["a", "b", "c"], files: ["1"], at: 20)       // +c, -2
        let server = r("S", tags: ["b", "d"], files: ["1", "2", "3"], at: 30) // -a, +d, +3
        let merged = ReceiptMerge.merge(base: base, local: local, server: server)
        XCTAssertEqual(Set(merged?.tags ?? []), ["b", "c", "d"])
        XCTAssertEqual(Set(merged?.attachments.map(\.filename) ?? []), ["1", "3"])
    }

    func testEditBeatsDeleteAndDeleteBeatsUnchanged() {
        let base = r("Shop")
        XCTAssertEqual(ReceiptMerge.merge(base: base, local: nil, server: r("Edited", at: 20))?.merchant, "Edited")
        XCTAssertEqual(ReceiptMerge.merge(base: base, local: r("Edited", at: 20), server: nil)?.merchant, "Edited")
        XCTAssertNil(ReceiptMerge.merge(base: base, local: nil, server: r("Shop", at: 99)))
        XCTAssertNil(ReceiptMerge.merge(base: base, local: r("Shop", at: 99), server: nil))
        XCTAssertNil(ReceiptMerge.merge(base: base, local: nil, server: nil))
    }

    func testMergeIsTheSameWhicheverSideMerges() {
        let base = r("Shop", note: "n", tags: ["x"])
        let a = r("A-shop", note: "n", tags: ["x", "y"], at: 30)
        let b = r("B-shop", note: "changed", tags: [], at: 30)
        let ab = ReceiptMerge.merge(base: base, local: a, server: b)
        let ba = ReceiptMerge.merge(base: base, local: b, server: a)
        XCTAssertEqual(ab.map { ReceiptMerge.sameContent($0, ba ?? $0) && ba != nil }, true)
        XCTAssertEqual(ab?.merchant, "B-shop")
        XCTAssertEqual(ab?.note, "changed")
        XCTAssertEqual(Set(ab?.tags ?? ["?"]), ["y"])
    }

    /// Readings (revision 6): a typed value beats a later filled one; an accept on one side removes
    /// a field from `filled`; a suggestion for a field the merge gave a value goes; either order agrees.
    func testReadingsMergeWithoutOverwritingWhatAPersonTyped() {
        let base = r(nil)
        var typed = r("Corner Shop Köln", at: 20)
        typed.total = "17.00"
        var read = r("CORNER SHOP", at: 30)
        read.total = "16.85"
        read.currency = "EUR"
        read.filled = ["currency", "merchant", "total"]
        read.filledLines = ["currency": "EUR", "merchant": "CORNER SHOP", "total": "TOTAL 16.85"]
        read.suggestions = ["date": WireSuggestion(value: "2025-03-04", confidence: 0.5, line: "03/04/25")]
        for (local, server) in [(typed, read), (read, typed)] {
            let m = ReceiptMerge.merge(base: base, local: local, server: server)
            XCTAssertEqual(m?.merchant, "Corner Shop Köln")
            XCTAssertEqual(m?.total, "17.00")
            XCTAssertEqual(m?.currency, "EUR")
            XCTAssertEqual(m?.filled, ["currency"])
            XCTAssertEqual(m?.filledLines, ["currency": "EUR"])
            XCTAssertEqual(m?.suggestions?["date"]?.value, "2025-03-04")
            XCTAssertNil(m?.validationError())
        }
        // One side accepts the total and takes the date; the other edits the note meanwhile.
        var accepted = read
        accepted.date = "2025-03-04"
        accepted.filled = ["currency", "merchant"]
        accepted.filledLines = ["currency": "EUR", "merchant": "CORNER SHOP"]
        accepted.suggestions = nil
        accepted.modifiedAt = 40
        var noted = read
        noted.note = "milk"
        noted.modifiedAt = 50
        let m = ReceiptMerge.merge(base: read, local: noted, server: accepted)
        XCTAssertEqual(m?.filled, ["currency", "merchant"])
        XCTAssertNil(m?.suggestions)
        XCTAssertEqual(m?.date, "2025-03-04")
        XCTAssertEqual(m?.note, "milk")
    }
}
