import Foundation

/// A sum of decimal amounts, exact: Foundation's `Decimal` (38 significant digits) holds any sum of
/// totals the catalog accepts (15 integer and 4 fraction digits each), so 0.10 + 0.20 is 0.30,
/// never 0.30000000000000004. Printed with as many decimals as the most precise amount added.
public struct ExactSum: Sendable, Equatable {
    public private(set) var value = Decimal(0)
    public private(set) var scale = 0

    public init() {}

    /// Adds an amount as the catalog stores it ("12.34", "-5", "0.1250"); false when it is not one.
    @discardableResult
    public mutating func add(_ amount: String) -> Bool {
        guard let decimal = Decimal(string: amount, locale: Locale(identifier: "en_US_POSIX")) else { return false }
        value += decimal
        if let dot = amount.firstIndex(of: ".") { scale = max(scale, amount.distance(from: dot, to: amount.endIndex) - 1) }
        return true
    }

    /// "12.30": the exact sum with `scale` decimals.
    public var text: String {
        var rounded = Decimal()
        var v = value
        NSDecimalRound(&rounded, &v, scale, .plain)
        var s = NSDecimalNumber(decimal: rounded).description(withLocale: Locale(identifier: "en_US_POSIX"))
        if s.hasPrefix("-0") && rounded.isZero { s.removeFirst() }
        guard scale > 0 else { return s }
        let pieces = s.split(separator: ".", omittingEmptySubsequences: false)
        let fraction = pieces.count > 1 ? String(pieces[1]) : ""
        return pieces[0] + "." + fraction.padding(toLength: scale, withPad: "0", startingAt: 0)
    }
}
