import Foundation
import ReceiptText
import ReceiptWire

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

        /// For a number with a separator (`16.85`, `11,30`, `14:32`), the form the text must print it
        /// in: an amount with anything but a colon between its parts, a time with its colon.
        var numberPattern: String? {
            let number = amount.map { _ in text } ?? text
            let parts = number.split(omittingEmptySubsequences: false, whereSeparator: { !$0.isNumber })
            guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isASCII } }) else { return nil }
            let separator = number.first { !$0.isNumber }
            if amount != nil || separator == "." || separator == "," {
                // OCR may print the decimal mark apart or lose it (`9 .00`, `9 00`): anything but a colon.
                return "(?<![0-9])\(parts[0])[^0-9:A-Za-z]{1,3}\(parts[1])(?![0-9])"
            }
            return separator == ":" ? "(?<![0-9])\(parts[0]):\(parts[1])(?![0-9])" : nil
        }
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
            let amount = prefix ? nil : Self.amount(word)
            // `$16.85` is searched as 16.85: the text may print the amount with another mark, or none.
            terms.append(Term(text: amount == nil ? word : Self.bareNumber(word), prefix: prefix, amount: amount))
        }
        terms = Self.droppingCurrencyWords(terms)
        guard !terms.isEmpty else {
            throw VaultError.bad("nothing to search for in '\(text)': give words, prefix*, \"a phrase\" or an amount such as 23.45")
        }
        self.terms = terms
    }

    static func hasWord(_ text: String) -> Bool { text.contains { $0.isLetter || $0.isNumber } }

    /// The canonical amount of a word such as `23.45`, `23,45`, `23`, `$16.85`, `€11,30`, `CHF18.00`,
    /// `-19.99` or `19.99-` (nil when it is not one: `14:32` is a time).
    static func amount(_ word: String) -> String? {
        let number = bareNumber(word)
        guard number.first?.isNumber == true else { return nil }
        let negative = word.hasPrefix("-") || word.hasSuffix("-") || word.prefix { !$0.isNumber }.contains("-")
        let total = (try? Validate.total(number.replacingOccurrences(of: ",", with: ".")))
            ?? Optional(AmountScanner.amounts(in: number)).flatMap { $0.count == 1 ? $0[0].decimal : nil }
        guard let total else { return nil }
        return negative && total != "0" ? "-" + total : total
    }

    /// The number of a word without the minus and currency marks around it (the word itself when
    /// what surrounds its digits is not such a mark).
    static func bareNumber(_ word: String) -> String {
        guard let first = word.firstIndex(where: \.isNumber), let last = word.lastIndex(where: \.isNumber) else { return word }
        let head = word[..<first].filter { $0 != "-" }
        let tail = word[word.index(after: last)...].filter { $0 != "-" }
        guard isCurrencyMark(head), isCurrencyMark(tail) else { return word }
        return String(word[first...last])
    }

    /// Nothing, `$`, or a currency symbol or code (`€`, `CHF`, `RM`, any ISO 4217 code).
    static func isCurrencyMark(_ text: String) -> Bool {
        let upper = text.uppercased()
        return upper.isEmpty || upper == "$" || upper == "US$" || AmountScanner.codes[upper] != nil || ISO4217.codes.contains(upper)
    }

    /// A currency code written apart from its amount (`CHF 18.00`, `18.00 EUR`) only says how the amount
    /// was written: the receipt need not contain the code.
    static func droppingCurrencyWords(_ terms: [Term]) -> [Term] {
        terms.enumerated().filter { i, term in
            guard term.amount == nil, !term.prefix, AmountScanner.codes[term.text.uppercased()] != nil else { return true }
            let beside = [i - 1, i + 1].filter(terms.indices.contains)
            return !beside.contains { terms[$0].amount != nil }
        }.map(\.1)
    }

    /// Whether a term is a number with a separator, which FTS5 alone cannot tell apart (`numbersAgree`).
    public var checksNumbers: Bool { terms.contains { $0.numberPattern != nil } }

    /// Whether `text` prints each number of the query that has a separator in the same kind of form:
    /// an amount with anything but a colon between its parts (OCR may print `9 .00`), a time with `:`.
    /// FTS5 reads `14:32` and `14.32` alike (two words, 14 and 32), so a time would otherwise find the
    /// amount and the amount the time.
    public func numbersAgree(in text: String, skipping: Set<Int> = []) -> Bool {
        terms.indices.allSatisfy { i in
            guard !skipping.contains(i), let pattern = terms[i].numberPattern else { return true }
            return text.range(of: pattern, options: .regularExpression) != nil
        }
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
