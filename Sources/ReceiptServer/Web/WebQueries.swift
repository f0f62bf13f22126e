import BlobStore
import Foundation
import ReceiptWire

/// What the receipt list is filtered by (every field optional).
struct WebFilter: Sendable {
    /// Each must begin a word of the receipt's metadata, an attachment's name or its text (WebSearch).
    var words: [String] = []
    var from: String?
    var to: String?
    var merchant: String?
    var category: String?
    /// `none` (no claim), `submitted`, `reimbursed` or `denied`.
    var status: String?
    /// The receipt's own date, newest first (undated last), instead of the newest added first: a
    /// photo uploaded without a date is then not on the last page.
    var byDate = false

    static let statuses = ["none", "submitted", "reimbursed", "denied"]
}

struct WebReceiptRow: Sendable {
    let id: String
    let changeTag: String
    let receipt: WireReceipt
}

struct WebZonePage: Sendable {
    let zone: VisibleZone
    let receipts: [WebReceiptRow]
    let matching: Int
    /// Exact sums per currency of the matching receipts that have a total.
    let totals: [(currency: String, total: Decimal, count: Int)]
}

/// Sums equal amounts counted by the database (`total`, `currency`, `n` rows) exactly as decimals.
struct WebTotals {
    private var sums: [String: (Decimal, Int)] = [:]
    private(set) var matching = 0

    mutating func add(total: String?, currency: String?, count: Int) {
        matching += count
        guard let total, let amount = Decimal(string: total, locale: Locale(identifier: "en_US_POSIX")) else { return }
        let key = currency ?? "(none)"
        let sum = sums[key] ?? (0, 0)
        sums[key] = (sum.0 + amount * Decimal(count), sum.1 + count)
    }

    /// A sum the database made exactly (PostgreSQL's NUMERIC) of `count` receipts.
    mutating func add(sum: String, currency: String?, count: Int) {
        matching += count
        guard let amount = Decimal(string: sum, locale: Locale(identifier: "en_US_POSIX")) else { return }
        let key = currency ?? "(none)"
        let previous = sums[key] ?? (0, 0)
        sums[key] = (previous.0 + amount, previous.1 + count)
    }

    var totals: [(currency: String, total: Decimal, count: Int)] {
        sums.sorted { $0.key < $1.key }.map { (currency: $0.key, total: $0.value.0, count: $0.value.1) }
    }
}
