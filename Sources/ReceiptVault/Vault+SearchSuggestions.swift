import Foundation
import GRDB
import ReceiptCatalog

/// "Did you mean": for a search that found nothing, the indexed words nearest to each word of the
/// query the index does not hold (an OCR or typing slip: amoxicilin, amoxicillin).
extension Vault {
    /// At most `most` words of the index for each unknown word of `text`, nearest first; [] when the
    /// index cannot be read for them (the suggestion is a help, never a failure of the search).
    public func nearbyWords(_ text: String, most: Int = 3) -> [String] {
        guard let query = try? SearchQuery(text) else { return [] }
        let words = query.terms.filter { $0.amount == nil && !$0.prefix && !$0.text.contains { $0.isNumber || $0.isWhitespace } }
            .map { $0.text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil) }
            // One or two letters are near too many words to suggest one.
            .filter { $0.count >= 3 }
        return (try? wrapped {
            try catalog.read { db in
                try words.flatMap { word -> [String] in
                    guard try !Catalog.isIndexedWord(db, word) else { return [] }
                    return try Self.nearest(db, to: word, most: most)
                }
            }
        }) ?? []
    }

    /// Words within 1 edit of a short word, 2 of a longer one; the closer, then the more common, first.
    static func nearest(_ db: Database, to word: String, most: Int) throws -> [String] {
        let letters = Array(word.unicodeScalars)
        let limit = letters.count <= 4 ? 1 : 2
        var found: [(word: String, distance: Int, receipts: Int)] = []
        try Catalog.forEachIndexedWord(db, lengths: max(1, letters.count - limit)...(letters.count + limit)) { term, receipts in
            guard term.contains(where: \.isLetter), let distance = editDistance(letters, Array(term.unicodeScalars), atMost: limit) else { return }
            found.append((term, distance, receipts))
            // Keeps the list short while the index streams by.
            if found.count > most * 8 { found = Array(ranked(found).prefix(most)) }
        }
        return ranked(found).prefix(most).map(\.word)
    }

    private static func ranked(_ found: [(word: String, distance: Int, receipts: Int)]) -> [(word: String, distance: Int, receipts: Int)] {
        found.sorted { ($0.distance, -$0.receipts, $0.word) < ($1.distance, -$1.receipts, $1.word) }
    }

    /// Levenshtein distance, or nil as soon as it must exceed `atMost`.
    static func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar], atMost: Int) -> Int? {
        guard abs(a.count - b.count) <= atMost else { return nil }
        var previous = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...max(b.count, 1) where !b.isEmpty {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            guard current.min()! <= atMost else { return nil }
            previous = current
        }
        return previous[b.count] <= atMost ? previous[b.count] : nil
    }
}
