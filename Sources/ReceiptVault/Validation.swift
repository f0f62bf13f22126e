import ReceiptCatalog
import Foundation
import ReceiptWire

/// Parsing and checking of user-supplied metadata. Each function returns the canonical form or
/// throws a `VaultError.badInput` naming the value.
public enum Validate {
    /// `YYYY-MM-DD` naming a real calendar day (2025-02-30 is refused).
    public static func date(_ text: String) throws -> String {
        // ASCII digits and two dashes, read as bytes (a manifest checks a date per row: splitting into
        // Characters and asking each whether it is a number took 1.3 µs a date).
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
              bytes.indices.allSatisfy({ $0 == 4 || $0 == 7 || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[$0]) })
        else {
            throw VaultError.bad("invalid date '\(text)': expected YYYY-MM-DD")
        }
        func number(_ range: Range<Int>) -> Int { bytes[range].reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) } }
        let (y, m, d) = (number(0..<4), number(5..<7), number(8..<10))
        guard (1...12).contains(m), d >= 1, d <= daysIn(month: m, year: y), y >= 1 else {
            throw VaultError.bad("invalid date '\(text)': no such day")
        }
        return text
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// An exact decimal amount such as `12.34`, `-5`, `0.5`: digits, at most one `.`, up to 4 decimals,
    /// no exponent, no grouping. Canonical form: no leading `+`, no superfluous leading zeros.
    public static func total(_ text: String) throws -> String {
        // Foundation's trimming is slow (a 100,000-row manifest calls this for every row); a value that
        // starts and ends with a visible ASCII character has nothing to trim.
        let visible = { (c: UInt8) in c > 0x20 && c < 0x7F }
        let plain = text.utf8.first.map(visible) == true && text.utf8.last.map(visible) == true
        var s = plain ? Substring(text) : Substring(text.trimmingCharacters(in: .whitespaces))
        var sign = ""
        if s.first == "-" { sign = "-"; s = s.dropFirst() } else if s.first == "+" { s = s.dropFirst() }
        let pieces = s.split(separator: ".", omittingEmptySubsequences: false)
        let digits = { (p: Substring) in !p.isEmpty && p.utf8.allSatisfy { $0 >= 48 && $0 <= 57 } }
        guard pieces.count <= 2, digits(pieces[0]), pieces[0].count <= 15,
              pieces.count == 1 || (digits(pieces[1]) && pieces[1].count <= 4) else {
            throw VaultError.bad("invalid total '\(text)': expected a decimal amount such as 12.34")
        }
        var whole = pieces[0].drop(while: { $0 == "0" })
        if whole.isEmpty { whole = "0" }
        let result = whole + (pieces.count == 2 ? "." + pieces[1] : "")
        let isZero = result.allSatisfy { $0 == "0" || $0 == "." }
        return (isZero ? "" : sign) + result
    }

    /// A claim status: none, submitted, reimbursed or denied.
    public static func status(_ text: String) throws -> String {
        guard let status = ClaimStatus(rawValue: text.lowercased()) else {
            throw VaultError.bad("invalid status '\(text)': expected one of "
                + ClaimStatus.allCases.map(\.rawValue).joined(separator: ", "))
        }
        return status.rawValue
    }

    /// An ISO 4217 currency code, upper-cased.
    public static func currency(_ text: String) throws -> String {
        let code = text.uppercased()
        guard ISO4217.codes.contains(code) else {
            throw VaultError.bad("unknown currency '\(text)': expected an ISO 4217 code such as USD or EUR")
        }
        return code
    }

    /// A zone name as given on the command line: `NAME` (own zone) or `OWNER/NAME` (shared with us).
    public static func zoneName(_ text: String) throws -> String {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), parts.allSatisfy(isName) else {
            throw VaultError.bad("invalid zone name '\(text)': use 1 to 64 letters, digits, '-', '_' or '.', not starting with '-' or '.' (OWNER/NAME for a shared zone)")
        }
        return text
    }

    /// Account and zone names: the server's rule (`WireName.isValid`), so a vault never accepts a
    /// name its server would refuse.
    public static func isName(_ s: Substring) -> Bool {
        WireName.isValid(String(s))
    }

    /// Free text (merchant, category, note, tag) is kept as data (`/`, `..`, newlines included); its
    /// length is bounded, and a NUL byte is refused: SQLite's text binding would silently cut the value
    /// there. A tag may not contain `;`, the manifest's tag separator.
    public static func text(_ value: String, field: String) throws -> String {
        guard value.utf8.count <= 4096 else {
            throw VaultError.bad("\(field) is too long (\(value.utf8.count) bytes; at most 4096)")
        }
        if value.utf8.contains(0) {
            throw VaultError.bad("\(field) contains a NUL byte, which the catalog cannot store")
        }
        if field == "tag" && value.contains(";") {
            throw VaultError.bad("tag '\(value)' contains ';', which separates tags in a manifest")
        }
        return value
    }
}
