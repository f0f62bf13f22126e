import ReceiptCatalog
import Foundation
import ReceiptWire

/// Parsing and checking of user-supplied metadata. Each function returns the canonical form or
/// throws a `VaultError.badInput` naming the value; a receipt's fields follow `ReceiptFields`.
public enum Validate {
    /// `YYYY-MM-DD` naming a real calendar day (2025-02-30 is refused).
    public static func date(_ text: String) throws -> String { try rule { try ReceiptFields.date(text) } }

    /// An exact decimal amount (`ReceiptFields.total`): `12.34`, `-5`, `37,80` → `37.80`.
    public static func total(_ text: String) throws -> String { try rule { try ReceiptFields.total(text) } }

    /// A claim status: none, submitted, reimbursed or denied.
    public static func status(_ text: String) throws -> String {
        guard let status = ClaimStatus(rawValue: text.lowercased()) else {
            throw VaultError.bad("invalid status '\(text)': expected one of "
                + ClaimStatus.allCases.map(\.rawValue).joined(separator: ", "))
        }
        return status.rawValue
    }

    /// A scope's dates and status in their canonical form, or the error naming the first bad one.
    public static func scope(_ scope: ReceiptScope) throws -> ReceiptScope {
        var scope = scope
        scope.from = try scope.from.map(date)
        scope.to = try scope.to.map(date)
        scope.status = try scope.status.map(status)
        return scope
    }

    /// An ISO 4217 currency code, upper-cased.
    public static func currency(_ text: String) throws -> String { try rule { try ReceiptFields.currency(text) } }

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

    /// Free text (merchant, category, note, tag, claim), kept as data (`ReceiptFields.text`).
    public static func text(_ value: String, field: String) throws -> String {
        try rule { try ReceiptFields.text(value, field: field) }
    }

    /// The receipt fields' rules are shared with the server (ReceiptWire); a vault reports their
    /// refusal as bad input, exit status 2.
    static func rule(_ body: () throws -> String) throws -> String {
        do { return try body() } catch let error as FieldError { throw VaultError.bad(error.description) }
    }
}
