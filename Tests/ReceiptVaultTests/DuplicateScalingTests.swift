import BlobStore
import Foundation
import ReceiptCatalog
import ReceiptText
@testable import ReceiptVault
import TestSupport
import XCTest

/// One shop's receipts share a template, so their texts meet in bands by the dozen; on other days they
/// are other purchases. Finding the two re-scans among them must compare pairs in proportion to the
/// receipts, not to the square of the shop's (real text files, real extraction, real SQLite).
final class DuplicateScalingTests: XCTestCase {
    /// A grocer's weekly receipt: the same header, items and footer, another date, total and one item.
    func receiptText(_ week: Int, misread: Bool = false) -> String {
        """
        GREEN GROCER LTD
        12 HIGH STREET SPRINGFIELD
        VAT NO 123 4567 89 TEL 01632 960123
        DATE \(date(week)) TILL 3 CASHIER ANNE
        APPLES GALA 1KG 1.20
        BREAD WHOLEMEAL LOAF 2.10
        MILK SEMI SKIMMED 2L 0.95
        EGGS FREE RANGE 6 1.85
        ITEM NUMBER \(week) OF THE WEEK 3.\(week % 10)0
        TOTAL \(total(week))
        PAID BY CARD CONTACTLESS
        THANK YOU FOR SHOPPING \(misread ? "W1TH" : "WITH") US
        PLEASE KEEP YOUR RECEIPT
        """
    }

    func date(_ week: Int) -> String {
        ISO8601DateFormatter.string(from: Date(timeIntervalSince1970: 1_704_067_200 + Double(week) * 7 * 86_400),
                                    timeZone: TimeZone(identifier: "UTC")!, formatOptions: [.withFullDate])
    }

    func total(_ week: Int) -> String { "\(10 + week).\(week % 100 < 10 ? "0" : "")\(week % 100)" }

    /// Imports each week's receipt (a misread one is a re-scan) with these fields, and reads their texts.
    func importReceipts(_ vault: Vault, in folder: TemporaryFolder,
                        _ receipts: [(week: Int, misread: Bool, date: String?, total: String?)]) throws -> [ReceiptID] {
        var ids: [ReceiptID] = []
        for (n, r) in receipts.enumerated() {
            let path = folder.file("receipt\(n).txt")
            try Data(receiptText(r.week, misread: r.misread).utf8).write(to: URL(fileURLWithPath: path))
            let metadata = ReceiptMetadata(merchant: "Green Grocer", date: r.date, total: r.total)
            ids += try vault.importFiles([path], zone: Zone.personal, metadata: metadata).imported.map(\.id)
        }
        _ = try vault.indexText(tools: try ExtractorTools.locate(searchPath: "/usr/bin:/bin"))
        return ids
    }

    /// A vault of `weeks` such receipts and re-scans of the first two; the pairs `dups` and the
    /// per-receipt check (as after an import) compared to find them, and the most signatures either
    /// held at once when told to keep at most 8.
    func pairsCompared(weeks: Int) throws -> (dups: Int, perReceipt: Int, held: Int) {
        let folder = TemporaryFolder("receipt-dups-scaling")
        let vault = try Vault.create(at: folder.file("vault"), inlineThreshold: 1024).vault
        defer { try? vault.close() }
        let ids = try importReceipts(vault, in: folder, (0..<weeks).map { ($0, false, date($0), total($0)) }
            + [(0, true, date(0), total(0)), (1, true, date(1), total(1))])
        let (groups, dupsPairs, dupsHeld) = try vault.findDuplicateGroups(zone: nil, heldAtMost: 8)
        XCTAssertEqual(groups, [DuplicateGroup(receipts: [ids[0], ids[weeks]], reason: "same-text"),
                                DuplicateGroup(receipts: [ids[1], ids[weeks + 1]], reason: "same-text")])
        let (found, perReceiptPairs, perReceiptHeld) = try vault.findPossibleDuplicates(of: ids, heldAtMost: 8)
        XCTAssertEqual(found, [ids[0]: [ids[weeks]], ids[weeks]: [ids[0]], ids[1]: [ids[weeks + 1]], ids[weeks + 1]: [ids[1]]])
        return (dupsPairs, perReceiptPairs, max(dupsHeld, perReceiptHeld))
    }

    func testPairsComparedGrowWithTheReceiptsNotTheirSquare() throws {
        let small = try pairsCompared(weeks: 20)
        let large = try pairsCompared(weeks: 40)
        // Twice the receipts: at most twice the pairs (every pair of a band was four times as many).
        XCTAssertLessThanOrEqual(large.dups, 2 * small.dups, "dups: \(small.dups) pairs for 22 receipts, \(large.dups) for 42")
        XCTAssertLessThanOrEqual(large.perReceipt, 2 * small.perReceipt,
                                 "per receipt: \(small.perReceipt) pairs for 22 receipts, \(large.perReceipt) for 42")
        // Memory: no more signatures held than told (the groups of candidates here are smaller), not
        // every receipt in a band.
        XCTAssertLessThanOrEqual(max(small.held, large.held), 8, "signatures held at once: \(small.held) of 22 receipts, \(large.held) of 42")
    }

    /// A re-scan without a date pairs with its receipt of any day, one without a total with its receipt
    /// of any amount; neither with the other weeks, whose dates or totals differ from theirs.
    func testAReceiptLackingADateOrTotalStillPairsByItsOtherField() throws {
        let folder = TemporaryFolder("receipt-dups-open")
        let vault = try Vault.create(at: folder.file("vault"), inlineThreshold: 1024).vault
        defer { try? vault.close() }
        let ids = try importReceipts(vault, in: folder, (0..<4).map { ($0, false, date($0), total($0)) }
            + [(2, true, nil, total(2)), (3, true, date(3), nil)])
        XCTAssertEqual(try vault.duplicateGroups(), [DuplicateGroup(receipts: [ids[2], ids[4]], reason: "same-text"),
                                                     DuplicateGroup(receipts: [ids[3], ids[5]], reason: "same-text")])
        XCTAssertEqual(try vault.possibleDuplicates(of: ids), [ids[2]: [ids[4]], ids[4]: [ids[2]], ids[3]: [ids[5]], ids[5]: [ids[3]]])
    }
}
