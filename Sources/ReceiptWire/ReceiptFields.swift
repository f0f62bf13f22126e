/// A receipt's metadata field refused by `ReceiptFields`: one line naming the value and what was
/// expected, the same words from the command line, a manifest, the web view and a push.
public struct FieldError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The one set of rules for a receipt's metadata (merchant, date, total, currency, category, note,
/// tags, claim, reimbursedOn): each rule returns the value's canonical form or throws a `FieldError`.
/// The vault (`Validate`, the CLI and manifests), the server's web forms and the wire's check
/// (`WireReceipt.validationError`) all call these, so no door takes what another refuses.
public enum ReceiptFields {
    /// Most bytes in one text field: what a vault's catalog stores.
    public static let maxTextBytes = 4096

    /// `YYYY-MM-DD` naming a real calendar day (2025-02-30 is refused); blanks around it are not kept.
    public static func date(_ text: String) throws -> String {
        // ASCII digits and two dashes, read as bytes (a manifest checks a date per row: splitting into
        // Characters and asking each whether it is a number took 1.3 µs a date).
        let trimmed = blankTrimmed(text)
        let bytes = Array(trimmed.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
              bytes.indices.allSatisfy({ $0 == 4 || $0 == 7 || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[$0]) })
        else {
            throw FieldError("invalid date '\(text)': expected YYYY-MM-DD")
        }
        func number(_ range: Range<Int>) -> Int { bytes[range].reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) } }
        let (y, m, d) = (number(0..<4), number(5..<7), number(8..<10))
        guard (1...12).contains(m), d >= 1, d <= daysIn(month: m, year: y), y >= 1 else {
            throw FieldError("invalid date '\(text)': no such day")
        }
        return String(trimmed)
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// An exact decimal amount such as `12.34`, `-5`, `0.5`: digits, at most one `.`, up to 4 decimals
    /// and 15 whole digits, no exponent, no grouping. A European keypad's decimal comma is taken when it
    /// cannot be a thousands separator (`37,80` and `37,8` are 37.80 and 37.8; `1,000` is refused).
    /// Canonical form: no leading `+`, no superfluous leading zeros, `.` as the separator.
    public static func total(_ text: String) throws -> String {
        var s = blankTrimmed(text)
        var sign = ""
        if s.first == "-" { sign = "-"; s = s.dropFirst() } else if s.first == "+" { s = s.dropFirst() }
        var pieces = s.split(separator: ".", omittingEmptySubsequences: false)
        if pieces.count == 1 {
            let comma = s.split(separator: ",", omittingEmptySubsequences: false)
            if comma.count == 2, (1...2).contains(comma[1].count) { pieces = comma }
        }
        let digits = { (p: Substring) in !p.isEmpty && p.utf8.allSatisfy { $0 >= 48 && $0 <= 57 } }
        guard pieces.count <= 2, digits(pieces[0]), pieces[0].count <= 15,
              pieces.count == 1 || (digits(pieces[1]) && pieces[1].count <= 4) else {
            throw FieldError("invalid total '\(text)': expected a decimal amount such as 12.34")
        }
        var whole = pieces[0].drop(while: { $0 == "0" })
        if whole.isEmpty { whole = "0" }
        let result = whole + (pieces.count == 2 ? "." + pieces[1] : "")
        let isZero = result.allSatisfy { $0 == "0" || $0 == "." }
        return (isZero ? "" : sign) + result
    }

    /// An ISO 4217 currency code, upper-cased; blanks around it are not kept.
    public static func currency(_ text: String) throws -> String {
        let code = blankTrimmed(text).uppercased()
        guard ISO4217.codes.contains(code) else {
            throw FieldError("unknown currency '\(text)': expected an ISO 4217 code such as USD or EUR")
        }
        return code
    }

    /// `text` without the blanks (spaces, tabs; not line breaks) around it: a date, total or currency
    /// typed or pasted with a space reads the same from the command line, a manifest and a web form.
    /// Foundation's trimming is slow (a 100,000-row manifest calls this for every row); a value that
    /// starts and ends with a visible ASCII character has nothing to trim.
    static func blankTrimmed(_ text: String) -> Substring {
        let visible = { (c: UInt8) in c > 0x20 && c < 0x7F }
        var s = Substring(text)
        if !(s.utf8.first.map(visible) == true && s.utf8.last.map(visible) == true) {
            let blank = { (c: Character) in c.isWhitespace && !c.isNewline }
            s = s.drop(while: blank)
            while s.last.map(blank) == true { s = s.dropLast() }
        }
        return s
    }

    /// Free text (merchant, category, note, tag, claim) is kept as data (`/`, `..`, newlines included);
    /// its length is bounded, and a NUL byte is refused: SQLite's text binding would silently cut the
    /// value there. A tag may not contain `;`, the manifest's tag separator.
    public static func text(_ value: String, field: String) throws -> String {
        guard value.utf8.count <= maxTextBytes else {
            throw FieldError("\(field) is too long (\(value.utf8.count) bytes; at most \(maxTextBytes))")
        }
        if value.utf8.contains(0) {
            throw FieldError("\(field) contains a NUL byte, which the catalog cannot store")
        }
        if field == "tag" && value.contains(";") {
            throw FieldError("tag '\(value)' contains ';', which separates tags in a manifest")
        }
        return value
    }
}
