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

    /// `codes` as Characters and, when ASCII, bytes, longest first: of two codes a print ends in
    /// (`US$`, `S$`) the longer is the one printed.
    static let codeMarks: [CodeMark] = codes.map { code, currency in
        CodeMark(chars: Array(code), bytes: code.isASCIIOnly ? Array(code.utf8) : nil, currency: currency)
    }.sorted { $0.chars.count > $1.chars.count }

    struct CodeMark: Sendable {
        let chars: [Character]
        let bytes: [UInt8]?
        let currency: String
    }

    /// Every amount of `line`, left to right. An ASCII line is read as its bytes, each one Character:
    /// asking Unicode's tables of each Character was the most of reading a receipt's amounts.
    public static func amounts(in line: String) -> [PrintedAmount] {
        // An amount starts with a digit: a line without one (half a receipt's) is not read.
        guard line.utf8.contains(where: \.isASCIIDigit) else { return [] }
        if line.isASCIIOnly {
            return amounts(in: line.utf8.map { $0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z") ? $0 - 0x20 : $0 })
        }
        return amounts(in: Array(line.uppercased()))
    }

    static func amounts<Unit: PrintUnit>(in chars: [Unit]) -> [PrintedAmount] {
        var found: [PrintedAmount] = []
        var index = 0
        while index < chars.count {
            guard chars[index].ascii.isASCIIDigit, index == 0 || !isNumberPart(chars[index - 1]) else {
                index += 1
                continue
            }
            var end = index
            while end < chars.count, isNumberPart(chars[end]) { end += 1 }
            // A trailing separator belongs to the sentence, not the number ("total 12.30.").
            while end > index, chars[end - 1].ascii == UInt8(ascii: ".") || chars[end - 1].ascii == UInt8(ascii: ",") { end -= 1 }
            if let cents = cents(chars[index..<end].map(\.ascii)), !isTime(chars, start: index, end: end) {
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

    static func isNumberPart<Unit: PrintUnit>(_ c: Unit) -> Bool {
        let byte = c.ascii
        return byte.isASCIIDigit || byte == UInt8(ascii: ".") || byte == UInt8(ascii: ",") || byte == UInt8(ascii: "'")
    }

    /// The value of `12.30`, `1,234.56`, `1.234,56`, `1'234.56`, `12,30` in cents; nil unless it ends in a
    /// separator and exactly two digits and its groups of thousands are of three digits. `chars` are
    /// ASCII (what `isNumberPart` takes), so bytes.
    static func cents(_ chars: [UInt8]) -> Int64? {
        guard chars.count >= 4, chars.count <= 16 else { return nil }
        let separator = chars[chars.count - 3]
        guard separator == UInt8(ascii: ".") || separator == UInt8(ascii: ","), chars[(chars.count - 2)...].allSatisfy(\.isASCIIDigit)
        else { return nil }
        let whole = chars[..<(chars.count - 3)]
        guard let first = whole.first, first.isASCIIDigit else { return nil }
        // The other separator groups thousands: every group after the first has three digits.
        let groups = whole.split(omittingEmptySubsequences: false) { !$0.isASCIIDigit }
        let grouping = whole.filter { !$0.isASCIIDigit }
        guard grouping.allSatisfy({ $0 != separator && $0 == grouping.first }),
              groups.dropFirst().allSatisfy({ $0.count == 3 }), groups.first.map({ (1...3).contains($0.count) || groups.count == 1 }) == true
        else { return nil }
        let digits = whole.filter(\.isASCIIDigit)
        guard digits.count <= 8 else { return nil }
        func value<C: Collection<UInt8>>(_ digits: C) -> Int64 { digits.reduce(0) { $0 * 10 + Int64($1 - UInt8(ascii: "0")) } }
        let cents = value(digits) * 100 + value(chars[(chars.count - 2)...])
        return cents <= maxCents ? cents : nil
    }

    /// `14:32`, `10:17:32`, `22.17PM`: a number glued to a colon or an AM/PM is a time of day.
    static func isTime<Unit: PrintUnit>(_ chars: [Unit], start: Int, end: Int) -> Bool {
        if start > 0, chars[start - 1].ascii == UInt8(ascii: ":") { return true }
        if end < chars.count, chars[end].ascii == UInt8(ascii: ":") { return true }
        var next = end
        while next < chars.count, chars[next].ascii == UInt8(ascii: " ") { next += 1 }
        if next + 1 < chars.count, chars[next].ascii == UInt8(ascii: "A") || chars[next].ascii == UInt8(ascii: "P"),
           chars[next + 1].ascii == UInt8(ascii: "M") { return true }
        return false
    }

    /// What is printed just before an amount: a minus, a currency code or symbol (`-RM 0.02`, `CHF 18.00`).
    static func prefix<Unit: PrintUnit>(_ chars: [Unit], before index: Int) -> (minus: Bool, currency: String?, dollar: Bool) {
        var cursor = skipSpaces(chars, back: index)
        var minus = isMinus(chars, cursor - 1)
        if minus { cursor = skipSpaces(chars, back: cursor - 1) }
        var currency: String?
        var dollar = false
        let found = codeMarks.lazy.compactMap { mark in Unit.units(of: mark).map { (mark.currency, $0) } }
            .first { chars[..<cursor].hasSuffix($0.1) && standsApart($0.1, chars, end: cursor) }
        if let (code, units) = found {
            currency = code
            cursor -= units.count
        } else if cursor > 0, chars[cursor - 1].ascii == UInt8(ascii: "$") {
            dollar = true
            cursor -= 1
        }
        if !minus, currency != nil || dollar { minus = isMinus(chars, skipSpaces(chars, back: cursor) - 1) }
        return (minus, currency, dollar)
    }

    /// What is printed just after an amount: a trailing minus (`19.99-`), a code or symbol (`11,30 €`).
    static func suffix<Unit: PrintUnit>(_ chars: [Unit], after end: Int) -> (minus: Bool, currency: String?, dollar: Bool) {
        if end < chars.count, isMinus(chars, end) { return (true, nil, false) }
        var cursor = end
        while cursor < chars.count, chars[cursor].ascii == UInt8(ascii: " ") { cursor += 1 }
        var stop = cursor
        while stop < chars.count, chars[stop].isLetterUnit || chars[stop].ascii == UInt8(ascii: "$") || chars[stop].isOutsideASCII("€")
            || chars[stop].isOutsideASCII("£") { stop += 1 }
        guard stop > cursor else { return (false, nil, false) }
        let word = Unit.string(chars[cursor..<stop])
        return (false, codes[word], word == "$")
    }

    static func skipSpaces<Unit: PrintUnit>(_ chars: [Unit], back index: Int) -> Int {
        var cursor = index
        while cursor > 0, chars[cursor - 1].ascii == UInt8(ascii: " ") { cursor -= 1 }
        return cursor
    }

    static func isMinus<Unit: PrintUnit>(_ chars: [Unit], _ index: Int) -> Bool {
        index >= 0 && index < chars.count && (chars[index].ascii == UInt8(ascii: "-") || chars[index].isOutsideASCII("−"))
    }

    /// A code of letters counts only as a word of its own: the `RM` of `TOTAL RM` or `(RM)`, not of `FORM`.
    static func standsApart<Unit: PrintUnit>(_ code: [Unit], _ chars: [Unit], end: Int) -> Bool {
        guard code.first?.isLetterUnit == true else { return true }
        let start = end - code.count
        return start == 0 || !chars[start - 1].isLetterUnit
    }
}

/// What `AmountScanner` reads a line as: its Characters, or the bytes of an ASCII line.
protocol PrintUnit: Equatable {
    /// The character's ASCII code, 0 for any other character.
    var ascii: UInt8 { get }
    var isLetterUnit: Bool { get }
    /// Whether this is `c`, a character outside ASCII (which no byte of an ASCII line is).
    func isOutsideASCII(_ c: Character) -> Bool
    /// A currency code as units of this kind; nil when no line of them can print it.
    static func units(of mark: AmountScanner.CodeMark) -> [Self]?
    static func string(_ units: ArraySlice<Self>) -> String
}

extension Character: PrintUnit {
    var ascii: UInt8 { asciiValue ?? 0 }
    var isLetterUnit: Bool { isLetter }
    func isOutsideASCII(_ c: Character) -> Bool { self == c }
    static func units(of mark: AmountScanner.CodeMark) -> [Character]? { mark.chars }
    static func string(_ units: ArraySlice<Character>) -> String { String(units) }
}

extension UInt8: PrintUnit {
    var ascii: UInt8 { self }
    var isLetterUnit: Bool { isASCIILetter }
    func isOutsideASCII(_ c: Character) -> Bool { false }
    static func units(of mark: AmountScanner.CodeMark) -> [UInt8]? { mark.bytes }
    static func string(_ units: ArraySlice<UInt8>) -> String { String(decoding: units, as: UTF8.self) }
}

extension ArraySlice where Element: Equatable {
    func hasSuffix(_ suffix: [Element]) -> Bool { count >= suffix.count && self[(endIndex - suffix.count)...].elementsEqual(suffix) }
}
