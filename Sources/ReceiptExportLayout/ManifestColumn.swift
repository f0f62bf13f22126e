/// The manifest's columns (CSV header names, case-insensitive, any order). Only `path` is required.
/// `filename` (the attachment's name inside the receipt; default: the last component of `path`) is an
/// addition of this project, written by `export` so names survive a round trip.
public enum ManifestColumn: String, CaseIterable, Sendable {
    case path, id, filename, merchant, date, total, currency, category, note, tags, sha256, zone
    case status, claim, reimbursedOn = "reimbursed_on"

    /// Position in `allCases`, without hashing (asked for every cell of every row).
    package var ordinal: Int {
        switch self {
        case .path: 0
        case .id: 1
        case .filename: 2
        case .merchant: 3
        case .date: 4
        case .total: 5
        case .currency: 6
        case .category: 7
        case .note: 8
        case .tags: 9
        case .sha256: 10
        case .zone: 11
        case .status: 12
        case .claim: 13
        case .reimbursedOn: 14
        }
    }
}
