import Foundation

/// A user's search, parsed: words (all must match), `prefix*` and `"quoted phrases"`, plus amounts
/// (`23.45`) that also match a receipt's total. Turned into an FTS5 expression in which every term is
/// a quoted string, so no character of the query is ever FTS5 syntax.
public struct SearchQuery: Sendable, Equatable {
    public struct Term: Sendable, Equatable {
        /// The words of the term (one for a word, several for a phrase).
        public var text: String
        public var prefix: Bool
        /// An amount such as 23.45: also matches receipts whose total is this amount.
        public var amount: String?
    }

    public var terms: [Term]

    public init(_ text: String) throws {
        var terms: [Term] = []
        var rest = Substring(text)
        while let start = rest.firstIndex(where: { !$0.isWhitespace }) {
            rest = rest[start...]
            if rest.first == "\"" {
                let body = rest.dropFirst()
                let end = body.firstIndex(of: "\"") ?? body.endIndex
                let phrase = String(body[..<end])
                rest = end == body.endIndex ? body[end...] : body[body.index(after: end)...]
                let prefix = rest.first == "*"
                if prefix { rest = rest.dropFirst() }
                if Self.hasWord(phrase) { terms.append(Term(text: phrase, prefix: prefix, amount: nil)) }
                continue
            }
            let end = rest.firstIndex(where: { $0.isWhitespace || $0 == "\"" }) ?? rest.endIndex
            var word = String(rest[..<end])
            rest = rest[end...]
            let prefix = word.hasSuffix("*")
            while word.hasSuffix("*") { word.removeLast() }
            guard Self.hasWord(word) else { continue }
            terms.append(Term(text: word, prefix: prefix, amount: prefix ? nil : Self.amount(word)))
        }
        guard !terms.isEmpty else {
            throw VaultError.bad("nothing to search for in '\(text)': give words, prefix*, \"a phrase\" or an amount such as 23.45")
        }
        self.terms = terms
    }

    static func hasWord(_ text: String) -> Bool { text.contains { $0.isLetter || $0.isNumber } }

    /// The canonical amount of a word such as `23.45`, `23,45` or `23` (nil when it is not one).
    static func amount(_ word: String) -> String? {
        let text = word.replacingOccurrences(of: ",", with: ".")
        guard text.first?.isNumber == true, let total = try? Validate.total(text) else { return nil }
        return total
    }

    /// The FTS5 expression requiring every term but those at `skipping`; nil when nothing is left.
    public func match(skipping: Set<Int> = []) -> String? {
        let parts = terms.indices.filter { !skipping.contains($0) }.map { i -> String in
            let t = terms[i]
            return "\"" + t.text.replacingOccurrences(of: "\"", with: "\"\"") + "\"" + (t.prefix ? "*" : "")
        }
        return parts.isEmpty ? nil : parts.joined(separator: " ")
    }

    /// The stored totals equal to an amount: the same number written with 0 to 4 decimals.
    static func totals(equalTo amount: String) -> [String] {
        let pieces = amount.split(separator: ".", omittingEmptySubsequences: false)
        let whole = String(pieces[0])
        var fraction = pieces.count > 1 ? String(pieces[1]) : ""
        while fraction.hasSuffix("0") { fraction.removeLast() }
        var out: [String] = []
        if fraction.isEmpty { out.append(whole) }
        for digits in max(fraction.count, 1)...4 {
            out.append(whole + "." + fraction.padding(toLength: digits, withPad: "0", startingAt: 0))
        }
        return out
    }

    /// Where a term first occurs in `text` (case and diacritics folded), for a snippet.
    func firstMatch(in text: String) -> Range<String.Index>? {
        var best: Range<String.Index>?
        for term in terms {
            let needle = term.amount ?? term.text
            guard let found = text.range(of: needle, options: [.caseInsensitive, .diacriticInsensitive]) else { continue }
            if let earlier = best, earlier.lowerBound <= found.lowerBound { continue }
            best = found
        }
        return best
    }

    /// A few words around the first match in `text`, the match in [brackets]; nil when no term occurs.
    public func snippet(of text: String, context: Int = 40) -> String? {
        guard let found = firstMatch(in: text) else { return nil }
        let start = text.index(found.lowerBound, offsetBy: -context, limitedBy: text.startIndex) ?? text.startIndex
        let end = text.index(found.upperBound, offsetBy: context, limitedBy: text.endIndex) ?? text.endIndex
        let flat = { (s: Substring) in s.split(whereSeparator: \.isWhitespace).joined(separator: " ") }
        return (start > text.startIndex ? "…" : "") + flat(text[start..<found.lowerBound])
            + (text[start..<found.lowerBound].last?.isWhitespace == true ? " " : "")
            + "[" + flat(text[found]) + "]"
            + (text[found.upperBound..<end].first?.isWhitespace == true ? " " : "")
            + flat(text[found.upperBound..<end]) + (end < text.endIndex ? "…" : "")
    }
}
