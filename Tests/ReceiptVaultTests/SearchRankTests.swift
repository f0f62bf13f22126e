import Foundation
import BlobStore
import GRDB
import ReceiptCatalog
import ReceiptText
@testable import ReceiptVault
import TestSupport
import XCTest

/// `receipt_rank` (SearchRank) against SQLite's own bm25(): the same receipts in the same order with
/// the same scores, bit for bit, whatever the limit (it skips rows that cannot reach it) and filter.
final class SearchRankTests: XCTestCase {
    func testRankingIsBm25WhateverTheLimitAndFilter() throws {
        let folder = TemporaryFolder("receipt-rank")
        let vault = try Vault.create(at: folder.file("vault"), inlineThreshold: 0).vault
        defer { try? vault.close() }
        // Receipts of many lengths holding "lentil" 0-4 times, some in a phrase, some in the merchant;
        // every fifth one a copy of another's text (same length, so ties that the date then breaks).
        var seed: UInt64 = 42
        func next(_ n: Int) -> Int {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Int((seed >> 33) % UInt64(n))
        }
        var texts: [String] = []
        for i in 0..<160 {
            if i % 5 == 4 { texts.append(texts[next(texts.count)]); continue }
            var words = (0..<(3 + next(120))).map { _ in ["rice", "oil", "paid", "card", "total", "soup"][next(6)] }
            for _ in 0..<next(5) { words.insert(next(2) == 0 ? "lentil" : "lentil soup", at: next(words.count + 1)) }
            texts.append(words.joined(separator: " "))
        }
        for (i, text) in texts.enumerated() {
            let path = try folder.write("in/r\(i).txt", text + "\n#\(i)")
            let metadata = ReceiptMetadata(merchant: i % 7 == 0 ? "Lentil House" : "Shop \(i % 3)",
                                           date: String(format: "2025-%02d-%02d", 1 + i % 12, 1 + i % 28),
                                           category: i % 2 == 0 ? "food" : "home")
            _ = try vault.importFiles([path], metadata: metadata)
        }
        // Receipts with no metadata whose text ends in "lentil", each in a file named lentil.txt: a
        // search for both words hits the last token of every column they have, so the length bound
        // that the hits give (SearchRank.State.rank) is their exact length and ties the K-th best.
        for j in 0..<12 {
            let words = (0..<(1 + j % 4)).map { ["rice", "oil", "paid", "card", "soup"][(j / 4 + $0) % 5] }
            let path = try folder.write("in/end\(j)/lentil.txt", (words + ["lentil"]).joined(separator: " "))
            _ = try vault.importFiles([path], metadata: ReceiptMetadata(date: String(format: "2024-01-%02d", 1 + j)))
        }
        let tools = try ExtractorTools.locate(searchPath: "/usr/bin:/bin")
        XCTAssertEqual(try vault.indexText(tools: tools).extracted, texts.count + 12)

        let weights = "5.0, 2.0, 1.0, 2.0, 2.0, 1.5, 1.0"
        for match in ["\"lentil\"", "\"lentil\" \"txt\"", "\"lentil soup\"", "\"lentil\" \"rice\"", "\"lent\"*", "\"soup\""] {
            for scope in [ReceiptScope(), ReceiptScope(category: "food"), ReceiptScope(from: "2025-06-01")] {
                let (filter, args) = scope.sql()
                for limit in [1, 3, 10, 25, 1000] {
                    var arguments: StatementArguments = [match]
                    arguments += args
                    arguments += [limit]
                    let expected = try vault.catalogRead { db in
                        try Row.fetchAll(db, sql: """
                            SELECT r.id, -bm25(receiptSearch, \(weights)) AS score
                            FROM receiptSearch JOIN receipts r ON r.rowid = receiptSearch.rowid
                            WHERE receiptSearch MATCH ? AND \(filter)
                            ORDER BY score DESC, r.date DESC, r.id LIMIT ?
                            """, arguments: arguments).map { "\(($0["id"] as ReceiptID).text) \(($0["score"] as Double).bitPattern)" }
                    }
                    let found = try vault.catalogRead { db in
                        try Catalog.search(db, match: match, scope: scope, limit: limit).map { "\($0.receiptID) \($0.score.bitPattern)" }
                    }
                    XCTAssertEqual(found, expected, "\(match) \(scope) --limit \(limit)")
                    XCTAssertFalse(found.isEmpty, "\(match) \(scope)")
                }
            }
        }
    }
}
