import BlobStore
import Foundation
import GRDB
import ReceiptCatalog

/// One search result: the `list` shape plus a score and where the query matched.
public struct SearchResult: Encodable, Sendable {
    public struct Match: Codable, Sendable, Equatable {
        public var sha256: String
        public var snippet: String
    }

    public var receipt: ReceiptView
    public var score: Double
    /// Around the best match among the receipt's fields and texts.
    public var snippet: String
    /// Each attachment whose extracted text matched, with a few words around the match.
    public var matches: [Match]

    enum Keys: String, CodingKey { case score, snippet, matches }

    public func encode(to encoder: Encoder) throws {
        try receipt.encode(to: encoder)
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(score, forKey: .score)
        try c.encode(snippet, forKey: .snippet)
        try c.encode(matches, forKey: .matches)
    }
}

extension Vault {
    /// Receipts matching `text` (see `SearchQuery`) within `scope`, best first, at most `limit`.
    /// A receipt whose total equals an amount of the query ranks above those matching only by text.
    public func search(_ text: String, scope: ReceiptScope = ReceiptScope(), limit: Int = 20) throws -> [SearchResult] {
        guard limit > 0 else { throw VaultError.bad("invalid --limit \(limit): give 1 or more") }
        let query = try SearchQuery(text)
        let scope = try Validate.scope(scope)
        return try wrapped {
            try catalog.read { db in
                if let zone = scope.zone { _ = try requireZone(db, zone) }
                var hits: [ReceiptID: SearchHit] = [:]
                // Matches whose numbers are printed in another form are dropped after FTS5: ask for more.
                let asked = query.checksNumbers ? limit * 4 + 16 : limit
                if let match = query.match() {
                    let found = try Catalog.search(db, match: match, scope: scope, limit: asked)
                    for hit in try agreeing(db, found, query, skipping: []) { hits[hit.receiptID] = hit }
                }
                for (i, term) in query.terms.enumerated() {
                    guard let amount = term.amount else { continue }
                    let found = try Catalog.searchTotals(db, totals: SearchQuery.totals(equalTo: amount),
                                                         match: query.match(skipping: [i]), scope: scope, limit: asked)
                    for var hit in try agreeing(db, found, query, skipping: [i]) {
                        // An exact total is the strongest evidence there is.
                        hit.score += 100
                        if let old = hits[hit.receiptID], old.score >= hit.score { continue }
                        hits[hit.receiptID] = hit
                    }
                }
                let ranked = hits.values.sorted { $0.score != $1.score ? $0.score > $1.score : $0.receiptID < $1.receiptID }
                    .prefix(limit)
                let receipts = try Catalog.receipts(db, ids: ranked.map(\.receiptID))
                let views = Dictionary(try self.views(db, receipts).map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
                let texts = try Self.texts(db, of: views.values)
                return ranked.compactMap { hit -> SearchResult? in
                    guard let view = views[hit.receiptID.text] else { return nil }
                    var seen = Set<String>()
                    let matches = view.attachments.compactMap { file -> SearchResult.Match? in
                        guard seen.insert(file.sha256).inserted, let text = texts[file.sha256],
                              let snippet = query.snippet(of: text) else { return nil }
                        return SearchResult.Match(sha256: file.sha256, snippet: snippet)
                    }
                    return SearchResult(receipt: view, score: (hit.score * 1000).rounded() / 1000, snippet: hit.snippet,
                                        matches: matches)
                }
            }
        }
    }

    /// The hits whose receipt prints the query's numbers in the query's form (`SearchQuery.numbersAgree`).
    private func agreeing(_ db: Database, _ hits: [SearchHit], _ query: SearchQuery, skipping: Set<Int>) throws -> [SearchHit] {
        guard query.checksNumbers, !hits.isEmpty else { return hits }
        let receipts = try Catalog.receipts(db, ids: hits.map(\.receiptID))
        let views = try self.views(db, receipts)
        let texts = try Self.texts(db, of: views)
        var agreeing = Set<String>()
        for view in views {
            let printed = [view.merchant, view.category, view.note, view.claim].compactMap { $0 } + view.tags
                + view.attachments.flatMap { [$0.filename, texts[$0.sha256] ?? ""] }
            if query.numbersAgree(in: printed.joined(separator: "\n"), skipping: skipping) { agreeing.insert(view.id) }
        }
        return hits.filter { agreeing.contains($0.receiptID.text) }
    }

    /// The extracted texts of the views' files, by their address as a view prints it.
    private static func texts(_ db: Database, of views: some Sequence<ReceiptView>) throws -> [String: String] {
        let ids = Set(views.flatMap { $0.attachments.compactMap { BlobID(hex: $0.sha256) } })
        return Dictionary(uniqueKeysWithValues: try Catalog.texts(db, Array(ids)).map { ($0.key.hex, $0.value) })
    }
}
