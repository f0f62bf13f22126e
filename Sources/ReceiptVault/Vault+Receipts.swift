import BlobStore
import Foundation
import GRDB
import ReceiptCatalog
import ReceiptWire

/// Metadata given by the user; nil fields are left as they are (edit) or absent (import).
public struct ReceiptMetadata: Sendable, Equatable {
    public var merchant: String?
    public var date: String?
    public var total: String?
    public var currency: String?
    public var category: String?
    public var note: String?
    public var tags: [String]?
    public var status: String?
    public var claim: String?
    public var reimbursedOn: String?

    public init(merchant: String? = nil, date: String? = nil, total: String? = nil, currency: String? = nil,
                category: String? = nil, note: String? = nil, tags: [String]? = nil, status: String? = nil,
                claim: String? = nil, reimbursedOn: String? = nil) {
        self.merchant = merchant
        self.date = date
        self.total = total
        self.currency = currency
        self.category = category
        self.note = note
        self.tags = tags
        self.status = status
        self.claim = claim
        self.reimbursedOn = reimbursedOn
    }

    /// Checks and canonicalizes every field; throws naming the first bad one.
    public func validated() throws -> ReceiptMetadata {
        var m = self
        m.merchant = try merchant.map { try Validate.text($0, field: "merchant") }
        // An empty value clears the field (`edit --clear`), as it does merchant, category and note.
        m.date = try date.map { $0.isEmpty ? "" : try Validate.date($0) }
        m.total = try total.map { $0.isEmpty ? "" : try Validate.total($0) }
        m.currency = try currency.map { $0.isEmpty ? "" : try Validate.currency($0) }
        m.category = try category.map { try Validate.text($0, field: "category") }
        m.note = try note.map { try Validate.text($0, field: "note") }
        m.tags = try tags.map { try $0.map { try Validate.text($0, field: "tag") } }
        m.status = try status.map(Validate.status)
        m.claim = try claim.map { try Validate.text($0, field: "claim") }
        m.reimbursedOn = try reimbursedOn.map { $0.isEmpty ? "" : try Validate.date($0) }
        return m
    }

    func apply(to r: inout Receipt) {
        if let merchant { r.merchant = merchant.isEmpty ? nil : merchant }
        if let date { r.date = date.isEmpty ? nil : date }
        if let total { r.total = total.isEmpty ? nil : total }
        if let currency { r.currency = currency.isEmpty ? nil : currency }
        if let category { r.category = category.isEmpty ? nil : category }
        if let note { r.note = note.isEmpty ? nil : note }
        if let tags { r.tags = tags }
        if let status { r.status = status }
        if let claim { r.claim = claim.isEmpty ? nil : claim }
        if let reimbursedOn { r.reimbursedOn = reimbursedOn.isEmpty ? nil : reimbursedOn }
    }
}

extension ReceiptMetadata: ReadableFields {}

extension Vault {
    /// Receipts matching `filter`, oldest date first (undated last), then by id.
    public func list(_ filter: ReceiptScope = ReceiptScope()) throws -> [ReceiptView] {
        var out: [ReceiptView] = []
        try forEachListed(filter) { out.append($0) }
        return out
    }

    /// The receipts `list` shows, oldest date first, handed to `body` one at a time: memory holds
    /// `chunk` receipts and their files, not the vault's (the filter is checked before the first).
    public func forEachListed(_ filter: ReceiptScope = ReceiptScope(), chunk: Int = 256,
                              _ body: (ReceiptView) throws -> Void) throws {
        let scope = try Validate.scope(filter)
        try wrapped {
            try catalog.read { db in
                if let zone = scope.zone { _ = try requireZone(db, zone) }
                var pending: [Receipt] = []
                var rows: [Int64] = []
                pending.reserveCapacity(chunk)
                rows.reserveCapacity(chunk)
                // Files are asked a chunk of receipts at a time: one query each, by the attachments' key
                // (the receipts' row numbers: the files of receipts imported together sit together).
                func flush() throws {
                    let files = try Catalog.files(db, ofRows: rows)
                    let readings = try Catalog.readings(db, ofRows: rows)
                    for (receipt, row) in zip(pending, rows) { try body(view(receipt, files[row] ?? [], readings[row])) }
                    pending.removeAll(keepingCapacity: true)
                    rows.removeAll(keepingCapacity: true)
                }
                try Catalog.forEachReceipt(db, in: scope) { receipt, row in
                    pending.append(receipt)
                    rows.append(row)
                    if pending.count >= chunk { try flush() }
                }
                try flush()
            }
        }
    }

    /// One receipt, by id or unique prefix of at least 8 characters.
    public func show(_ idOrPrefix: String) throws -> ReceiptView {
        try wrapped {
            try catalog.read { db in
                let id = try resolveReceipt(db, idOrPrefix)
                guard let receipt = try Catalog.receipt(db, id) else {
                    throw VaultError(.notFound, "no receipt \(idOrPrefix)")
                }
                return try views(db, [receipt])[0]
            }
        }
    }

    /// Changes metadata fields given in `changes`; returns the receipt as it now is.
    @discardableResult
    public func edit(_ idOrPrefix: String, _ changes: ReceiptMetadata) throws -> ReceiptView {
        let changes = try changes.validated()
        return try wrapped {
            try mutate { w in
                let db = w.db
                let id = try resolveReceipt(db, idOrPrefix)
                guard var receipt = try Catalog.receipt(db, id) else {
                    throw VaultError(.notFound, "no receipt \(idOrPrefix)")
                }
                try requireWritable(db, receipt.zone)
                changes.apply(to: &receipt)
                receipt.modifiedAt = w.now
                try w.changeReceipt(receipt)
                try confirmReading(w, receipt, setting: changes)
                return try views(db, [receipt])[0]
            }
        }
    }

    /// Deletes receipts (all or nothing). Their blobs stay until gc finds them unreferenced.
    @discardableResult
    public func remove(_ idsOrPrefixes: [String]) throws -> [ReceiptID] {
        try wrapped {
            try mutate { w in
                let db = w.db
                let ids = try idsOrPrefixes.map { try resolveReceipt(db, $0) }
                for id in Set(ids) {
                    guard let receipt = try Catalog.receipt(db, id) else { continue }
                    try requireWritable(db, receipt.zone)
                    try w.removeReceipt(id, zone: receipt.zone)
                }
                return ids
            }
        }
    }

    /// Removes one attachment (by full hash or unique prefix) from a receipt.
    @discardableResult
    public func detach(_ idOrPrefix: String, blob: String) throws -> ReceiptView {
        try wrapped {
            try mutate { w in
                let db = w.db
                let id = try resolveReceipt(db, idOrPrefix)
                guard var receipt = try Catalog.receipt(db, id) else { throw VaultError(.notFound, "no receipt \(idOrPrefix)") }
                try requireWritable(db, receipt.zone)
                let matches = try Catalog.attachments(db, of: id)
                    .filter { $0.sha256.hex.hasPrefix(blob.lowercased()) }
                guard blob.count >= 8, matches.count == 1 else {
                    throw VaultError(.notFound, matches.count > 1
                        ? "attachment \(blob) of receipt \(id) is ambiguous: give more of its hash"
                        : "receipt \(id) has no attachment \(blob)")
                }
                try w.deleteAttachment(matches[0])
                receipt.modifiedAt = w.now
                try w.changeReceipt(receipt)
                return try views(db, [receipt])[0]
            }
        }
    }

    // MARK: - Shared helpers

    /// Receipts with their attachments (a handful: one query for their files).
    func views(_ db: Database, _ receipts: [Receipt]) throws -> [ReceiptView] {
        let files = try Catalog.files(db, of: receipts.map(\.id))
        var readings: [ReceiptID: ReceiptReading] = [:]
        for receipt in receipts {
            if let row = try Catalog.receiptRow(db, id: receipt.id) { readings[receipt.id] = try Catalog.readings(db, ofRows: [row])[row] }
        }
        return receipts.map { view($0, files[$0.id] ?? [], readings[$0.id]) }
    }

    func view(_ r: Receipt, _ files: [AttachedFile], _ reading: ReceiptReading? = nil) -> ReceiptView {
        var view = ReceiptView(id: r.id.text, zone: r.zone, merchant: r.merchant, date: r.date, total: r.total, currency: r.currency,
                    category: r.category, note: r.note, tags: r.tags,
                    attachments: files.map {
                        ReceiptView.File(sha256: $0.sha256.hex, filename: $0.filename, size: $0.size, mediaType: $0.mediaType)
                    },
                    status: r.status, claim: r.claim, reimbursedOn: r.reimbursedOn)
        // What changed since the reading (a person's edit synced in, a manifest) is no longer the reading's.
        for (name, field) in reading?.pending(in: r).fields ?? [:] {
            if field.filled {
                view.filled.append(name)
            } else {
                view.suggestions[name] = FieldSuggestion(value: field.value, confidence: field.confidence, line: field.line)
            }
        }
        view.filled.sort()
        return view
    }

    /// A full id, or a unique prefix of at least 8 characters, either case (a prefix is no id: it is
    /// looked up, not parsed).
    func resolveReceipt(_ db: Database, _ text: String) throws -> ReceiptID {
        let key = text.lowercased()
        guard key.count >= 8, key.allSatisfy({ $0.isHexDigit || $0 == "-" }) else {
            throw VaultError.bad("invalid receipt id '\(text)': give the id or at least its first 8 characters")
        }
        let ids = try Catalog.receiptIDs(db, prefixed: key)
        switch ids.count {
        case 0: throw VaultError(.notFound, "no receipt \(text)")
        case 1: return ids[0]
        default: throw VaultError.bad("receipt id prefix '\(text)' is ambiguous: give more characters")
        }
    }

    func requireZone(_ db: Database, _ name: String) throws -> Zone {
        guard let zone = try Catalog.zone(db, name) else {
            throw VaultError(.notFound, "no zone '\(name)' in this vault (see `receipt zone list`)")
        }
        return zone
    }

    func requireWritable(_ db: Database, _ name: String) throws {
        let zone = try requireZone(db, name)
        if !zone.role.canWrite {
            throw VaultError.bad("zone '\(name)' is shared with this account read-only: its receipts cannot be changed")
        }
    }

    /// One write transaction under the shared vault lock, on the catalog this vault opened: `fsck
    /// --repair` replaces an unreadable catalog under the exclusive lock, and a change must not land
    /// in the one it set aside.
    func mutate<T>(_ body: (CatalogWriter) throws -> T) throws -> T {
        try locked(.shared) { try catalog.transaction(body) }
    }

    func wrapped<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch { throw VaultError.wrap(error) }
    }
}
