import Foundation
import GRDB
import ReceiptCatalog

/// What a report groups receipts by.
public enum ReportGrouping: String, Sendable, CaseIterable {
    case category, merchant, month, year, status

    /// The SQL expression of the key, on receipts aliased `r`.
    var sql: String {
        switch self {
        case .category: return "r.category"
        case .merchant: return "r.merchant"
        case .month: return "substr(r.date, 1, 7)"
        case .year: return "substr(r.date, 1, 4)"
        case .status: return "r.status"
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
        var scope = scope
        scope.from = try scope.from.map(Validate.date)
        scope.to = try scope.to.map(Validate.date)
        scope.status = try scope.status.map(Validate.status)
        return try wrapped {
            try catalog.read { db in
                if let zone = scope.zone { _ = try requireZone(db, zone) }
                let (filter, args) = scope.sql()
                struct Key: Hashable { var key: String?; var currency: String? }
                var sums: [Key: (count: Int, sum: ExactSum)] = [:]
                var withoutTotal = 0
                let rows = try Row.fetchCursor(db, sql: """
                    SELECT \(grouping.sql), r.currency, r.total FROM receipts r WHERE \(filter)
                    """, arguments: args)
                while let row = try rows.next() {
                    guard let total = row[2] as String? else { withoutTotal += 1; continue }
                    let key = Key(key: row[0], currency: row[1])
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
