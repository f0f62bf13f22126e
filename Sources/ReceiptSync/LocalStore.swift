import BlobStore
import Foundation
import GRDB
import ReceiptCatalog
import ReceiptVault
import ReceiptWire

/// The sync engine's reads and writes of the vault catalog. Rows applied from the server are
/// written here directly, never through the vault's mutation API, so they add nothing to the outbox.
enum LocalStore {
    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return e
    }()

    static func encode(_ receipt: WireReceipt?) throws -> String? {
        try receipt.map { String(decoding: try encoder.encode($0), as: UTF8.self) }
    }

    static func decode(_ text: String?) -> WireReceipt? {
        text.flatMap { try? JSONDecoder().decode(WireReceipt.self, from: Data($0.utf8)) }
    }

    /// A receipt's current content with its zone, or nil when it does not exist locally.
    static func content(_ db: Database, _ id: ReceiptID) throws -> (zone: String, receipt: WireReceipt)? {
        guard let r = try Catalog.receipt(db, id) else { return nil }
        let attachments = (try Catalog.files(db, of: [id])[id] ?? []).map {
            WireAttachment(sha256: $0.sha256.hex, size: $0.size, filename: $0.filename, mediaType: $0.mediaType)
        }
        var receipt = WireReceipt(merchant: r.merchant, date: r.date, total: r.total, currency: r.currency,
                                  category: r.category, note: r.note, tags: r.tags, attachments: attachments,
                                  createdAt: r.createdAt, modifiedAt: r.modifiedAt,
                                  // `none` travels as absent, as a revision-1 peer writes it.
                                  status: r.status == ClaimStatus.none.rawValue ? nil : r.status,
                                  claim: r.claim, reimbursedOn: r.reimbursedOn)
        if let reading = try Catalog.reading(db, receiptID: id)?.pending(in: r) { wire(reading, into: &receipt) }
        return (r.zone, receipt)
    }

    /// A reading as it travels (revision 6): filled names with their lines, suggestions.
    static func wire(_ reading: ReceiptReading, into receipt: inout WireReceipt) {
        receipt.filled = reading.filled
        receipt.filledLines = reading.fields.filter(\.value.filled).mapValues(\.line)
        receipt.suggestions = reading.suggestions.mapValues { WireSuggestion(value: $0.value, confidence: $0.confidence, line: $0.line) }
        receipt.tidyReadings()
    }

    /// The reading a pulled receipt carries: a filled field's value is the receipt's own.
    static func reading(of receipt: WireReceipt) -> ReceiptReading {
        var fields: [String: FieldReading] = [:]
        for name in receipt.filled ?? [] {
            guard let value = receipt.value(ofRead: name) else { continue }
            fields[name] = FieldReading(value: value, confidence: 1, line: receipt.filledLines?[name] ?? "", filled: true)
        }
        for (name, s) in receipt.suggestions ?? [:] {
            fields[name] = FieldReading(value: s.value, confidence: s.confidence, line: s.line, filled: false)
        }
        return ReceiptReading(extractor: pulledReading, fields: fields)
    }

    /// The extractor a pulled reading is recorded with: another member's vault read it.
    static let pulledReading = "pulled"

    /// Makes the local receipt `id` in `zone` hold `content` (nil: deletes it). Every blob it
    /// references must already be in the catalog.
    static func apply(_ w: CatalogWriter, id: ReceiptID, zone: String, content: WireReceipt?) throws {
        guard let content else {
            try w.deletePulled(id)
            return
        }
        let receipt = Receipt(id: id, zone: zone, merchant: content.merchant, date: content.date, total: content.total,
                              currency: content.currency, category: content.category, note: content.note,
                              tags: content.tags, createdAt: content.createdAt, modifiedAt: content.modifiedAt,
                              status: content.status ?? ClaimStatus.none.rawValue, claim: content.claim,
                              reimbursedOn: content.reimbursedOn)
        let files = try content.attachments.map { a in
            guard let blob = BlobID(hex: a.sha256) else { throw SyncError("receipt \(id) names an invalid blob address '\(a.sha256)'") }
            return (sha256: blob, filename: a.filename, mediaType: a.mediaType)
        }
        let before = try Catalog.receipt(w.db, id).flatMap { old in try Catalog.reading(w.db, receiptID: id)?.pending(in: old) }
        try w.savePulled(receipt)
        try w.replaceAttachments(of: id, with: files)
        let after = reading(of: content)
        try w.savePulledReading(after, receiptID: id)
        if let before { try Vault.learnFromPulled(w, before: before, after: after, receipt: receipt) }
    }

    struct SyncState {
        var zone: String
        var changeTag: String
        var base: WireReceipt?
    }

    static func state(_ db: Database, _ id: ReceiptID) throws -> SyncState? {
        guard let row = try Catalog.syncState(db, id) else { return nil }
        return SyncState(zone: row.zone, changeTag: row.changeTag, base: decode(row.base))
    }

    static func setState(_ w: CatalogWriter, _ id: ReceiptID, zone: String, tag: String, base: WireReceipt?) throws {
        try w.setSyncState(id, SyncStateRow(zone: zone, changeTag: tag, base: try encode(base)))
    }

    static func hasPending(_ db: Database, _ id: ReceiptID) throws -> Bool {
        try Outbox.hasPending(db, id)
    }

    /// Ensures the outbox holds an entry for `id` (a merged version the server has not seen yet).
    static func ensurePending(_ w: CatalogWriter, _ id: ReceiptID, zone: String, deleted: Bool) throws {
        try w.recordChangeUnlessPending(id, zone: zone, deleted ? .delete : .upsert)
    }

    /// Addresses among `ids` the catalog does not hold, in order.
    static func missingBlobs(_ db: Database, _ ids: Set<BlobID>) throws -> [BlobID] {
        try ids.sorted().filter { try !Catalog.hasBlob(db, $0) }
    }

    static func same(_ a: WireReceipt?, _ b: WireReceipt?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case (let x?, let y?): return ReceiptMerge.sameContent(x, y)
        default: return false
        }
    }
}
