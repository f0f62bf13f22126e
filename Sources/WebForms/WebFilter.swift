import Foundation

/// What the receipt list is filtered by (every field optional).
public struct WebFilter: Sendable {
    /// Each must begin a word of the receipt's metadata, an attachment's name or its text (WebSearch).
    public var words: [String] = []
    public var from: String?
    public var to: String?
    public var merchant: String?
    public var category: String?
    /// `none` (no claim), `submitted`, `reimbursed` or `denied`.
    public var status: String?
    /// The receipt's own date, newest first (undated last), instead of the newest added first: a
    /// photo uploaded without a date is then not on the last page.
    public var byDate = false

    public static let statuses = ["none", "submitted", "reimbursed", "denied"]

    public init(words: [String] = [], from: String? = nil, to: String? = nil, merchant: String? = nil,
                category: String? = nil, status: String? = nil, byDate: Bool = false) {
        self.words = words
        self.from = from
        self.to = to
        self.merchant = merchant
        self.category = category
        self.status = status
        self.byDate = byDate
    }
}

/// Sums equal amounts counted by the database (`total`, `currency`, `n` rows) exactly as decimals.
public struct WebTotals {
    private var sums: [String: (Decimal, Int)] = [:]
    public private(set) var matching = 0

    public init() {}

    public mutating func add(total: String?, currency: String?, count: Int) {
        matching += count
        guard let total, let amount = Decimal(string: total, locale: Locale(identifier: "en_US_POSIX")) else { return }
        let key = currency ?? "(none)"
        let sum = sums[key] ?? (0, 0)
        sums[key] = (sum.0 + amount * Decimal(count), sum.1 + count)
    }

    /// A sum the database made exactly (PostgreSQL's NUMERIC) of `count` receipts.
    public mutating func add(sum: String, currency: String?, count: Int) {
        matching += count
        guard let amount = Decimal(string: sum, locale: Locale(identifier: "en_US_POSIX")) else { return }
        let key = currency ?? "(none)"
        let previous = sums[key] ?? (0, 0)
        sums[key] = (previous.0 + amount, previous.1 + count)
    }

    public var totals: [(currency: String, total: Decimal, count: Int)] {
        sums.sorted { $0.key < $1.key }.map { (currency: $0.key, total: $0.value.0, count: $0.value.1) }
    }
}
