import BlobStore
import CFileOps
import Foundation
import GRDB
import ReceiptCatalog
#if canImport(Glibc)
import Glibc
#endif

/// Counters for a manifest import's progress display: first every row is checked (files hashed),
/// then written.
public struct ManifestProgress: Sendable {
    public enum Phase: Sendable { case checking, importing }
    public var phase: Phase
    public var rowsDone: Int
    /// 0 while checking (the manifest is streamed, its row count is not known in advance).
    public var rowsTotal: Int
    public var bytesDone: Int64
    public var bytesTotal: Int64
}

/// What a manifest import did, in numbers; the rows themselves went to `importManifest`'s `each`.
public struct ManifestSummary: Sendable, Equatable {
    /// Files attached (rows not `existing`).
    public var added = 0
    /// Receipts that gained at least one of those files.
    public var receiptsAdded = 0
    /// Rows whose file was already there (same receipt, or the same name and content in the zone).
    public var existing = 0
    public var failed: [FailedFile] = []
}

/// The metadata of one receipt as a manifest gives it: the values of the metadata columns present
/// in the header, canonical (validated). An empty value clears the field.
struct ManifestMetadata: Equatable {
    /// The values, shared (copied on write) and absent when none was set: a row of pass 2 that is
    /// not its receipt's first carries none, and then costs a pointer instead of ten empty slots
    /// (16,384 rows of a batch in flight, twice).
    private var box: Box?

    private final class Box: @unchecked Sendable {
        // Changed only through `values`' `_modify`, when this metadata holds the only reference.
        var values: Values
        init(_ values: Values) { self.values = values }
    }

    var values: Values {
        get { box?.values ?? Values() }
        _modify {
            if !isKnownUniquelyReferenced(&box) { box = Box(box?.values ?? Values()) }
            let unique = box ?? Box(Values())
            box = unique
            yield &unique.values
        }
    }

    static func == (a: ManifestMetadata, b: ManifestMetadata) -> Bool { a.box === b.box || a.values == b.values }

    /// One slot per metadata column: held inline, not in a dictionary per row of a large manifest.
    struct Values: Equatable {
        private var merchant, date, total, currency, category, note, tags, status, claim, reimbursedOn: String?

        subscript(_ column: ManifestColumn) -> String? {
            get {
                switch column {
                case .merchant: merchant
                case .date: date
                case .total: total
                case .currency: currency
                case .category: category
                case .note: note
                case .tags: tags
                case .status: status
                case .claim: claim
                case .reimbursedOn: reimbursedOn
                default: nil
                }
            }
            set {
                switch column {
                case .merchant: merchant = newValue
                case .date: date = newValue
                case .total: total = newValue
                case .currency: currency = newValue
                case .category: category = newValue
                case .note: note = newValue
                case .tags: tags = newValue
                case .status: status = newValue
                case .claim: claim = newValue
                case .reimbursedOn: reimbursedOn = newValue
                default: break
                }
            }
        }

        /// The columns with a value, in `ManifestMetadata.columns` order.
        var present: [(column: ManifestColumn, value: String)] {
            ManifestMetadata.columns.compactMap { c in self[c].map { (c, $0) } }
        }
    }

    static let columns: [ManifestColumn] = [.merchant, .date, .total, .currency, .category, .note, .tags,
                                            .status, .claim, .reimbursedOn]

    func apply(to r: inout Receipt) {
        func text(_ c: ManifestColumn) -> String?? {
            guard let v = values[c] else { return .none }
            return .some(v.isEmpty ? nil : v)
        }
        if let v = text(.merchant) { r.merchant = v }
        if let v = text(.date) { r.date = v }
        if let v = text(.total) { r.total = v }
        if let v = text(.currency) { r.currency = v }
        if let v = text(.category) { r.category = v }
        if let v = text(.note) { r.note = v }
        if let v = values[.tags] { r.tags = Self.splitTags(v) }
        if let v = text(.status) { r.status = v ?? ClaimStatus.none.rawValue }
        if let v = text(.claim) { r.claim = v }
        if let v = text(.reimbursedOn) { r.reimbursedOn = v }
    }

    /// Without leading and trailing spaces and tabs (cheaper than Foundation's trimming, which a
    /// 100,000-row manifest calls half a million times).
    static func trimmed(_ text: Substring) -> String {
        var t = text
        while let c = t.first, c == " " || c == "\t" { t.removeFirst() }
        while let c = t.last, c == " " || c == "\t" { t.removeLast() }
        return String(t)
    }

    static func trimmed(_ text: String?) -> String? { text.map { trimmed(Substring($0)) } }

    static func splitTags(_ text: String) -> [String] {
        text.split(separator: ";").map { trimmed(Substring($0)) }.filter { !$0.isEmpty }
    }
}

/// A receipt a manifest describes (one or several rows sharing an id, or one row without id).
struct ManifestReceipt {
    /// The receipt's id, a UUID: its 16 bytes rather than 36 characters on the heap.
    let uuid: UUID
    var id: ReceiptID { ReceiptID(uuid) }

    /// The id was given in the manifest (so a receipt with that id may already exist and is updated).
    let given: Bool
    let firstLine: Int
    var zone: String
    /// The zone came from the row's `zone` column or from `--zone`, not from a default.
    var zoneExplicit: Bool
    var metadata: ManifestMetadata
    /// A receipt with this id is in the vault already.
    var exists: Bool
}

/// A receipt id's 16 bytes as two big-endian words, ordered like the id's text.
struct UUIDKey: Comparable {
    let high, low: UInt64

    init(_ uuid: UUID) {
        let b = uuid.uuid
        func word(_ bytes: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8)) -> UInt64 {
            withUnsafeBytes(of: bytes) { $0.reduce(0) { $0 << 8 | UInt64($1) } }
        }
        high = word((b.0, b.1, b.2, b.3, b.4, b.5, b.6, b.7))
        low = word((b.8, b.9, b.10, b.11, b.12, b.13, b.14, b.15))
    }

    static func < (a: UUIDKey, b: UUIDKey) -> Bool { (a.high, a.low) < (b.high, b.low) }
}

/// A row's file to hash (pass 1), with what the row said about it.
struct HashJob: Sendable {
    let line: Int
    let given: String
    /// In the manifest's real folder; the last component may still be a symbolic link.
    let path: String
    /// The real folder of `path`.
    let folder: String
    let realFolder: String
    let name: String
    let filename: String?
    let expected: BlobID?
    /// The receipt the file belongs to; nil when the row is bad anyway.
    let receipt: Int?
}

/// What `hash` found: the file's real path and status, its content address and media type.
struct HashedFile: Sendable {
    let path: String
    let status: FileStatus
    /// nil for a large file not hashed yet.
    var id: BlobID?
    let mediaType: String
    /// The address came from the stat cache.
    var cached: Bool
}
