import Foundation
import ReceiptCatalog

/// What a report groups receipts by.
public enum ReportGrouping: String, Sendable, CaseIterable {
    case category, merchant, month, year, status

    /// The catalog's column (or expression) of the key.
    var key: ReportKey {
        switch self {
        case .category: return .category
        case .merchant: return .merchant
        case .month: return .month
        case .year: return .year
        case .status: return .status
        }
    }
}

/// Counts and exact totals per group and currency; receipts without a total are counted apart.
public struct Report: Codable, Sendable, Equatable {
    public struct Group: Codable, Sendable, Equatable {
        /// The group's value (nil: receipts without one, e.g. no category or no date).
        public var key: String?
        public var currency: String?
        public var count: Int
        /// The exact decimal sum, as a string ("1234.56").
        public var total: String

        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(key, forKey: .key)
            try c.encode(currency, forKey: .currency)
            try c.encode(count, forKey: .count)
            try c.encode(total, forKey: .total)
        }
    }

    public var groups: [Group]
    public var withoutTotal: Int
}

extension Vault {
    /// Groups the receipts of `scope` by `grouping` and currency. Amounts are summed as exact
    /// decimals (`ExactSum`); rows are read one at a time, so memory grows with the groups only.
    public func report(scope: ReceiptScope = ReceiptScope(), by grouping: ReportGrouping = .category) throws -> Report {
        let scope = try Validate.scope(scope)
        return try wrapped {
            try catalog.read { db in
                if let zone = scope.zone { _ = try requireZone(db, zone) }
                struct Key: Hashable { var key: String?; var currency: String? }
                var sums: [Key: (count: Int, sum: ExactSum)] = [:]
                var withoutTotal = 0
                try Catalog.forEachTotal(db, by: grouping.key, in: scope) { group, currency, total in
                    guard let total else { withoutTotal += 1; return }
                    let key = Key(key: group, currency: currency)
                    var entry = sums[key] ?? (0, ExactSum())
                    entry.count += 1
                    guard entry.sum.add(total) else {
                        throw VaultError(.io, "the catalog holds a total that is not a decimal amount: '\(total)'")
                    }
                    sums[key] = entry
                }
                let groups = sums.map { Report.Group(key: $0.key.key, currency: $0.key.currency, count: $0.value.count,
                                                     total: $0.value.sum.text) }
                    .sorted { a, b in
                        // Named groups first, in order; then currency.
                        if a.key != b.key { return (a.key ?? "\u{10FFFF}") < (b.key ?? "\u{10FFFF}") }
                        return (a.currency ?? "") < (b.currency ?? "")
                    }
                return Report(groups: groups, withoutTotal: withoutTotal)
            }
        }
    }
}
