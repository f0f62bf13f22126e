/// A sum of money as printed on a receipt: its value in hundredths (receipts print two decimals) and
/// the currency the print named, if it named one.
public struct PrintedAmount: Sendable, Equatable {
    /// Hundredths of the currency unit (cents): `-1234` is -12.34.
    public var cents: Int64
    /// ISO 4217 code when a symbol or code printed beside the number names exactly one currency.
    public var currency: String?
    /// True when the print carried a symbol that more than one currency uses (`$`): a hint, not a fact.
    public var dollarSign: Bool

    /// `12.30`, `-5.00`: the form `receipt` stores totals in.
    public var decimal: String {
        let sign = cents < 0 ? "-" : ""
        let magnitude = cents.magnitude
        let fraction = magnitude % 100
        return "\(sign)\(magnitude / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}

/// Finds the amounts printed in one line of receipt text: `1,234.56`, `1.234,56`, `12,30`, `RM12.30`,
/// `$ 16.85`, `CHF 18.00`, `€11,30`, `11,30 €`, `-19.99`, `19.99-`. An amount is a number with exactly two
/// decimals (every receipt prints them so; a count, a code or a time does not); a time (`14:32`) is not one.
public enum AmountScanner {
    /// Largest amount read: ten million units. Anything bigger on a household receipt is a misread code.
    static let maxCents: Int64 = 1_000_000_000

    /// Currency codes and symbols this reader names; a symbol used by several currencies is not here.
    public static let codes: [String: String] = [
        "RM": "MYR", "MYR": "MYR", "EUR": "EUR", "€": "EUR", "USD": "USD", "US$": "USD", "GBP": "GBP", "£": "GBP",
        "CHF": "CHF", "SFR": "CHF", "FR.": "CHF", "SGD": "SGD", "S$": "SGD", "CAD": "CAD", "C$": "CAD", "AUD": "AUD",
        "A$": "AUD", "JPY": "JPY", "¥": "JPY", "SEK": "SEK", "NOK": "NOK", "DKK": "DKK", "PLN": "PLN", "ZŁ": "PLN",
        "CZK": "CZK", "KČ": "CZK", "INR": "INR", "₹": "INR",
    ]

    /// Every amount of `line`, left to right.
    public static func amounts(in line: String) -> [PrintedAmount] {
        let chars = Array(line.uppercased())
        var found: [PrintedAmount] = []
        var index = 0
        while index < chars.count {
            guard chars[index].isASCII, chars[index].isNumber, index == 0 || !isNumberPart(chars[index - 1]) else {
                index += 1
                continue
            }
            var end = index
            while end < chars.count, isNumberPart(chars[end]) { end += 1 }
            // A trailing separator belongs to the sentence, not the number ("total 12.30.").
            while end > index, chars[end - 1] == "." || chars[end - 1] == "," { end -= 1 }
            if let cents = cents(String(chars[index..<end])), !isTime(chars, start: index, end: end) {
                let before = prefix(chars, before: index)
                let after = suffix(chars, after: end)
                let negative = before.minus || after.minus
                let currency = before.currency ?? after.currency
                found.append(PrintedAmount(cents: negative ? -cents : cents, currency: currency,
                                           dollarSign: currency == nil && (before.dollar || after.dollar)))
            }
            index = max(end, index + 1)
        }
        return found
    }

    static func isNumberPart(_ c: Character) -> Bool {
        (c.isASCII && c.isNumber) || c == "." || c == "," || c == "'"
    }

    /// The value of `12.30`, `1,234.56`, `1.234,56`, `1'234.56`, `12,30` in cents; nil unless it ends in a
    /// separator and exactly two digits and its groups of thousands are of three digits.
    static func cents(_ text: String) -> Int64? {
        let chars = Array(text)
        guard chars.count >= 4, chars.count <= 16 else { return nil }
        let separator = chars[chars.count - 3]
        guard separator == "." || separator == ",", chars[(chars.count - 2)...].allSatisfy(\.isNumber) else { return nil }
        let whole = Array(chars[..<(chars.count - 3)])
        guard let first = whole.first, first.isNumber else { return nil }
        // The other separator groups thousands: every group after the first has three digits.
        let groups = whole.split(omittingEmptySubsequences: false) { !$0.isNumber }
        let grouping = whole.filter { !$0.isNumber }
        guard grouping.allSatisfy({ $0 != separator && $0 == grouping.first }),
              groups.dropFirst().allSatisfy({ $0.count == 3 }), groups.first.map({ (1...3).contains($0.count) || groups.count == 1 }) == true
        else { return nil }
        let digits = whole.filter(\.isNumber)
        guard digits.count <= 8, let units = Int64(String(digits)), let hundredths = Int64(String(chars[(chars.count - 2)...]))
        else { return nil }
        let value = units * 100 + hundredths
        return value <= maxCents ? value : nil
    }

    /// `14:32`, `10:17:32`, `22.17PM`: a number glued to a colon or an AM/PM is a time of day.
    static func isTime(_ chars: [Character], start: Int, end: Int) -> Bool {
        if start > 0, chars[start - 1] == ":" { return true }
        if end < chars.count, chars[end] == ":" { return true }
        var next = end
        while next < chars.count, chars[next] == " " { next += 1 }
        if next + 1 < chars.count, chars[next] == "A" || chars[next] == "P", chars[next + 1] == "M" { return true }
        return false
    }

    /// What is printed just before an amount: a minus, a currency code or symbol (`-RM 0.02`, `CHF 18.00`).
    static func prefix(_ chars: [Character], before index: Int) -> (minus: Bool, currency: String?, dollar: Bool) {
        var cursor = skipSpaces(chars, back: index)
        var minus = isMinus(chars, cursor - 1)
        if minus { cursor = skipSpaces(chars, back: cursor - 1) }
        var currency: String?
        var dollar = false
        let tail = String(chars[max(0, cursor - 4)..<cursor])
        if let code = codes.keys.filter({ tail.hasSuffix($0) && standsApart($0, chars, end: cursor) })
            .max(by: { $0.count < $1.count }) {
            currency = codes[code]
            cursor -= code.count
        } else if tail.hasSuffix("$") {
            dollar = true
            cursor -= 1
        }
        if !minus, currency != nil || dollar { minus = isMinus(chars, skipSpaces(chars, back: cursor) - 1) }
        return (minus, currency, dollar)
    }

    /// What is printed just after an amount: a trailing minus (`19.99-`), a code or symbol (`11,30 €`).
    static func suffix(_ chars: [Character], after end: Int) -> (minus: Bool, currency: String?, dollar: Bool) {
        if end < chars.count, isMinus(chars, end) { return (true, nil, false) }
        var cursor = end
        while cursor < chars.count, chars[cursor] == " " { cursor += 1 }
        var stop = cursor
        while stop < chars.count, chars[stop].isLetter || chars[stop] == "$" || chars[stop] == "€" || chars[stop] == "£" { stop += 1 }
        let word = String(chars[cursor..<stop])
        return (false, codes[word], word == "$")
    }

    static func skipSpaces(_ chars: [Character], back index: Int) -> Int {
        var cursor = index
        while cursor > 0, chars[cursor - 1] == " " { cursor -= 1 }
        return cursor
    }

    static func isMinus(_ chars: [Character], _ index: Int) -> Bool {
        index >= 0 && index < chars.count && (chars[index] == "-" || chars[index] == "−")
    }

    /// A code of letters counts only as a word of its own: the `RM` of `TOTAL RM` or `(RM)`, not of `FORM`.
    static func standsApart(_ code: String, _ chars: [Character], end: Int) -> Bool {
        guard code.first?.isLetter == true else { return true }
        let start = end - code.count
        return start == 0 || !chars[start - 1].isLetter
    }
}
