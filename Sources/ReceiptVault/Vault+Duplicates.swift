import BlobStore
import Foundation
import GRDB
import ReceiptCatalog
import ReceiptText

/// Receipts that may be one receipt entered twice, as `receipt dups` prints them.
public struct DuplicateGroup: Codable, Sendable, Equatable {
    public var receipts: [ReceiptID]
    /// `same-text` (a re-scan: the texts are near-identical) or `same-fields` (merchant, date and
    /// total equal, and at least one of them has no text to tell them apart).
    public var reason: String
}

/// Re-scans and duplicates: flagged, never removed. Each receipt's text leaves a signature when it is
/// read (`TextSignature`); alike texts meet through its band keys in an index, so neither `dups` nor
/// an import reads every text of the vault. Two receipts of one shop, day and amount whose texts
/// differ are two purchases: equal fields flag only receipts that have no text to compare.
extension Vault {
    /// Signs, a batch at a time, the receipts whose text was read before signatures were kept.
    func signUnsigned() throws {
        var after: Int64 = 0
        while true {
            let rows = try wrapped {
                try catalog.read { db in try Catalog.unsignedRows(db, extractor: TextExtractor.version, after: after, limit: 256) }
            }
            guard let last = rows.last else { return }
            try sign(rows: rows)
            after = last
        }
    }

    private func sign(rows: [Int64]) throws {
        try wrapped { try mutate { w in try sign(rows: rows, w) } }
    }

    private func sign(rows: [Int64], _ w: CatalogWriter) throws {
        for row in rows {
            try sign(row: row, text: Catalog.texts(w.db, ofRow: row, extractor: TextExtractor.version).map(\.text).joined(separator: "\n"), w)
        }
    }

    /// Stores the signature of the receipt at `row`, whose files' texts joined are `text` (its reading
    /// signs it in the transaction that stores the text: `readReceipts(holding:_:)`).
    func sign(row: Int64, text: String, _ w: CatalogWriter) throws {
        // A text without words is stored as an empty signature: it is known, and alike to none.
        try w.setTextSignature(row: row, extractor: TextExtractor.version, minhash: TextSignature(text: text)?.bytes ?? [])
    }

    /// The groups of possible duplicates, of one zone or all; receipts are only grouped within a zone.
    public func duplicateGroups(zone: String? = nil) throws -> [DuplicateGroup] {
        try findDuplicateGroups(zone: zone).groups
    }

    /// The groups, and how many pairs of receipts were compared to find them: that count is what `dups`
    /// costs, and it grows with the receipts and the duplicates, not with the square of a band's
    /// receipts (`DuplicateScalingTests`).
    func findDuplicateGroups(zone: String?, heldAtMost: Int = PairComparer.heldAtMost) throws
        -> (groups: [DuplicateGroup], pairsCompared: Int, mostHeld: Int) {
        // An unknown zone is refused before anything is written.
        if let zone { try wrapped { try catalog.read { db in _ = try requireZone(db, zone) } } }
        try signUnsigned()
        return try wrapped {
            try catalog.read { db in
                var pairs = PairComparer(db: db, heldAtMost: heldAtMost)
                var sameText = UnionFind()
                try Catalog.forEachSharedBand(db, zone: zone) { rows in try pairs.join(rows, into: &sameText, when: Self.sameText) }
                var sameFields = UnionFind()
                try Catalog.forEachSameFields(db, zone: zone) { rows in try pairs.join(rows, into: &sameFields, when: Self.untold) }
                let textGroups = sameText.groups()
                let textGroupOf = Dictionary(uniqueKeysWithValues: textGroups.enumerated().flatMap { i, g in g.map { ($0, i) } })
                // A group already flagged by its text is not flagged again by its fields.
                let fieldGroups = sameFields.groups().filter { g in Set(g.map { textGroupOf[$0] }).count > 1 || textGroupOf[g[0]] == nil }
                let all = textGroups.map { ($0, "same-text") } + fieldGroups.map { ($0, "same-fields") }
                let ids = try Catalog.receiptIDs(db, rows: all.flatMap(\.0))
                let groups = all.sorted { $0.0[0] < $1.0[0] }.map { rows, reason in
                    DuplicateGroup(receipts: rows.compactMap { ids[$0] }, reason: reason)
                }
                return (groups, pairs.compared, pairs.mostHeld)
            }
        }
    }

    /// For each of these receipts that may duplicate others, those others' ids (after an import).
    public func possibleDuplicates(of ids: [ReceiptID]) throws -> [ReceiptID: [ReceiptID]] {
        try findPossibleDuplicates(of: ids).found
    }

    /// As `possibleDuplicates(of:)`, with the pairs compared: each receipt is compared with the receipts
    /// it shares a band with and does not differ from in date and total, not with every receipt of its
    /// band (`DuplicateScalingTests`).
    func findPossibleDuplicates(of ids: [ReceiptID], heldAtMost: Int = PairComparer.heldAtMost) throws
        -> (found: [ReceiptID: [ReceiptID]], pairsCompared: Int, mostHeld: Int) {
        try wrapped {
            try catalog.read { db in
                var out: [ReceiptID: [ReceiptID]] = [:]
                var pairs = PairComparer(db: db, heldAtMost: heldAtMost)
                for id in ids {
                    guard let row = try Catalog.receiptRow(db, id: id) else { continue }
                    var others = try pairs.alike(row, Catalog.bandNeighbours(db, row: row), when: Self.sameText)
                    others += try pairs.alike(row, Catalog.sameFields(db, row: row), when: Self.untold)
                    let kept = try Set(others).filter { try !Catalog.keptApart(db, row, $0) }
                    guard !kept.isEmpty else { continue }
                    out[id] = try Catalog.receiptIDs(db, rows: Array(kept)).sorted { $0.key < $1.key }.map(\.value)
                }
                return (out, pairs.compared, pairs.mostHeld)
            }
        }
    }

    /// As `possibleDuplicates(of:)` for the receipts created since `createdSince` (a manifest's rows may
    /// add files to receipts that exist), from the vault's groups: one pass over its bands and fields
    /// instead of a look-up per receipt (5,000 rows of a manifest: 0.25 s against 9 s, debug build).
    /// Which receipts are new is asked of the catalog, not held: a million rows' ids were 32 MB.
    public func possibleDuplicates(createdSince: Millis) throws -> [ReceiptID: [ReceiptID]] {
        let groups = try duplicateGroups()
        let new = try wrapped {
            try catalog.read { db in try Catalog.receipts(db, among: groups.flatMap(\.receipts), createdSince: createdSince) }
        }
        var out: [ReceiptID: [ReceiptID]] = [:]
        for group in groups {
            for id in group.receipts where new.contains(id) {
                out[id, default: []] += group.receipts.filter { $0 != id && !(out[id] ?? []).contains($0) }
            }
        }
        return out
    }

    /// Says these receipts are distinct purchases: `dups` and `import` no longer pair them.
    public func keepApart(_ idsOrPrefixes: [String]) throws {
        guard Set(idsOrPrefixes).count >= 2 else { throw VaultError.bad("give at least two receipts to keep apart") }
        try wrapped {
            try mutate { w in
                let db = w.db
                let rows = try idsOrPrefixes.map { given -> Int64 in
                    let id = try resolveReceipt(db, given)
                    guard let row = try Catalog.receiptRow(db, id: id) else { throw VaultError(.notFound, "no receipt \(given)") }
                    return row
                }
                for (i, a) in rows.enumerated() { for b in rows[(i + 1)...] where a != b { try w.keepApart(a, b) } }
            }
        }
    }

    /// What tells two receipts apart: the signature of their text and the date and total they hold.
    struct Known {
        var signature: TextSignature?
        var date: String?
        var total: String?
    }

    /// Compares receipts pair by pair, each receipt's signature and fields read once while it stays
    /// among the `heldAtMost` last read: a receipt meets others in up to 32 bands, and reading it
    /// again for each was most of `dups` (10,000 receipts: 5.9× the CPU with nothing kept between
    /// groups), while keeping every one read would grow with the vault.
    struct PairComparer {
        /// About 700 bytes a receipt held (its signature's minima and its fields): some 35 MB.
        static let heldAtMost = 50_000
        let db: Database
        private var known: [Int64: Known] = [:]
        /// The pairs compared: what finding duplicates costs.
        private(set) var compared = 0
        /// The most receipts' signatures held at once: what finding duplicates keeps in memory.
        private(set) var mostHeld = 0

        let heldAtMost: Int

        init(db: Database, heldAtMost: Int) { (self.db, self.heldAtMost) = (db, heldAtMost) }

        /// Joins each pair of `rows` that `alike` says may be one receipt, unless a person kept them
        /// apart. Only receipts whose dates and totals do not differ are compared: those with both pair
        /// within their (date, total), one lacking either with any; a pair already in one group is not
        /// compared (joining it would change nothing).
        mutating func join(_ rows: [Int64], into groups: inout UnionFind, when alike: (Known?, Known?) -> Bool) throws {
            try read(rows)
            var complete: [[String]: [Int64]] = [:]
            var open: [Int64] = []
            for row in rows {
                if let fields = known[row], let date = fields.date, let total = fields.total {
                    complete[[date, total], default: []].append(row)
                } else {
                    open.append(row)
                }
            }
            for same in complete.values {
                for (i, a) in same.enumerated() { for b in same[(i + 1)...] { try join(a, b, into: &groups, when: alike) } }
            }
            for (i, a) in open.enumerated() {
                for b in open[(i + 1)...] + complete.values.joined() { try join(a, b, into: &groups, when: alike) }
            }
        }

        private mutating func join(_ a: Int64, _ b: Int64, into groups: inout UnionFind, when alike: (Known?, Known?) -> Bool) throws {
            guard !groups.together(a, b) else { return }
            compared += 1
            if alike(known[a], known[b]), try !Catalog.keptApart(db, a, b) { groups.join(a, b) }
        }

        /// The `others` that `alike` says may be one receipt with `row`.
        mutating func alike(_ row: Int64, _ others: [Int64], when alike: (Known?, Known?) -> Bool) throws -> [Int64] {
            try read(others + [row])
            compared += others.count
            return others.filter { alike(known[row], known[$0]) }
        }

        private mutating func read(_ rows: [Int64]) throws {
            var wanted = rows.filter { known[$0] == nil }
            guard !wanted.isEmpty else { return }
            // Full: start again rather than track which were read last (a group is read whole anyway).
            if known.count + wanted.count > heldAtMost { known.removeAll(keepingCapacity: true); wanted = rows }
            for (row, fields) in try Catalog.signedFields(db, rows: wanted) {
                known[row] = Known(signature: fields.signature.flatMap { TextSignature(bytes: $0) }, date: fields.date, total: fields.total)
            }
            mostHeld = max(mostHeld, known.count)
        }
    }

    /// Near-identical texts whose dates and totals do not differ: one shop's weekly receipt for the
    /// same purchase reads alike but for its date, and is a purchase of its own. The fields first:
    /// one shop's receipts share a template, so one band gathers hundreds of them, and comparing
    /// their signatures pair by pair was nearly all of `dups` (10,000 receipts: 163 s, debug build).
    private static func sameText(_ a: Known?, _ b: Known?) -> Bool {
        guard let a, let b, !differ(a.date, b.date), !differ(a.total, b.total), let sa = a.signature, let sb = b.signature else {
            return false
        }
        return sa.similarity(sb) >= TextSignature.sameText
    }

    private static func differ(_ a: String?, _ b: String?) -> Bool {
        guard let a, let b else { return false }
        return a != b
    }

    /// Neither text can tell the two apart: one of them has none (or none with words).
    private static func untold(_ a: Known?, _ b: Known?) -> Bool {
        a?.signature == nil || b?.signature == nil
    }
}

/// Receipt rows joined into groups, only the rows ever joined kept (memory grows with duplicates,
/// not with the vault).
struct UnionFind {
    private var parent: [Int64: Int64] = [:]

    mutating func join(_ a: Int64, _ b: Int64) {
        let (ra, rb) = (root(a), root(b))
        if ra != rb { parent[max(ra, rb)] = min(ra, rb) }
    }

    /// Whether the two rows are in one group already.
    mutating func together(_ a: Int64, _ b: Int64) -> Bool { root(a) == root(b) }

    private mutating func root(_ x: Int64) -> Int64 {
        var r = x
        while let p = parent[r], p != r { r = p }
        parent[x] = r == x ? nil : r
        return r
    }

    /// Each group's rows in order, groups by their first row.
    mutating func groups() -> [[Int64]] {
        var byRoot: [Int64: [Int64]] = [:]
        for x in Array(parent.keys) { byRoot[root(x), default: [root(x)]].append(x) }
        return byRoot.values.map { Array(Set($0)).sorted() }.sorted { $0[0] < $1[0] }
    }
}
