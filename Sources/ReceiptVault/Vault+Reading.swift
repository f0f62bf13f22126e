import BlobStore
import Foundation
import GRDB
import ReceiptCatalog
import ReceiptText
import ReceiptWire

/// One file's extracted text, as `show --text` prints it.
public struct ExtractedText: Codable, Sendable, Equatable {
    public var filename: String
    public var text: String?

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(filename, forKey: .filename)
        try c.encode(text, forKey: .text)
    }
}

/// Reading receipts: after their text is extracted, the fields a receipt leaves blank are filled from
/// it when the text is certain, else offered as suggestions; a value a person typed is never touched.
/// A person confirms (`review accept`, `edit`) and teaches: a renamed header line becomes a merchant
/// alias, a confirmed day order is remembered for the merchant.
extension Vault {
    /// The fields a reading may fill, in the order they are read.
    static let readFields: [ReadField] = WireReceipt.readFields.compactMap(ReadField.init(rawValue:))

    /// Signs the receipts that hold one of `blobs` and reads those in writable zones, in the transaction
    /// `w` that stores those blobs' text: a power cut after the text was stored and before its reading
    /// left the receipts unread for good (the text was no longer pending, so no `index` read it again;
    /// tools/powerloss found it). Each receipt's text is looked up once for both. Returns how many
    /// receipts had a field filled or suggested.
    @discardableResult
    func readReceipts(holding blobs: [BlobID], _ w: CatalogWriter) throws -> Int {
        guard !blobs.isEmpty else { return 0 }
        let version = TextExtractor.version
        let db = w.db
        let rows = try Catalog.receiptRows(db, withBlobs: blobs)
        let locale = try Catalog.setting(db, Self.localeSetting).flatMap(DateOrder.init(locale:))
        let aliases = try Catalog.merchantAliases(db)
        var count = 0
        for (row, id) in rows {
            let texts = try Catalog.texts(db, ofRow: row, extractor: version)
            let text = texts.map(\.text).joined(separator: "\n")
            try sign(row: row, text: text, w)
            guard !texts.isEmpty, var receipt = try Catalog.receipt(db, id),
                  try Catalog.zone(db, receipt.zone)?.role.canWrite == true else { continue }
            var reader = ReceiptReader(order: locale, merchantAliases: aliases)
            var proposals = reader.read(text)
            // A merchant's own day order, once a person confirmed one, outranks the vault's: the
            // text is read again in it (the merchant read does not depend on the order).
            let merchant = receipt.merchant ?? proposals.first { $0.field == .merchant }?.value
            if let merchant, let order = try Catalog.dateOrder(db, merchantKey: ReceiptReader.aliasKey(merchant)),
               DateOrder(rawValue: order) != reader.order {
                reader.order = DateOrder(rawValue: order)
                proposals = reader.read(text)
            }
            // What an earlier reading filled and no one changed stays filled (and under review).
            var reading = try Catalog.readings(db, ofRows: [row])[row]?.pending(in: receipt) ?? ReceiptReading(extractor: version, fields: [:])
            reading.extractor = version
            var filledNow = false
            for proposal in proposals where Self.readFields.contains(proposal.field) {
                let name = proposal.field.rawValue
                guard receipt.value(ofRead: name) == nil else { continue }
                let fill = proposal.fills && (try? Self.canonical(proposal.field, proposal.value)) != nil
                if fill { receipt.set(read: name, to: proposal.value) }
                filledNow = filledNow || fill
                reading.fields[name] = FieldReading(value: proposal.value, confidence: proposal.confidence,
                                                    line: proposal.line, filled: fill)
            }
            guard !reading.fields.isEmpty else { continue }
            if filledNow {
                receipt.modifiedAt = w.now
                try w.changeReceipt(receipt)
            }
            try w.setReading(reading, row: row)
            count += 1
        }
        return count
    }

    /// Confirms the filled fields of a receipt and takes its suggestions (`fields`, or all of them).
    @discardableResult
    public func acceptReading(_ idOrPrefix: String, fields: [String]? = nil) throws -> ReceiptView {
        try wrapped {
            try mutate { w in
                let db = w.db
                let id = try resolveReceipt(db, idOrPrefix)
                guard var receipt = try Catalog.receipt(db, id), let row = try Catalog.receiptRow(db, id: id) else {
                    throw VaultError(.notFound, "no receipt \(idOrPrefix)")
                }
                try requireWritable(db, receipt.zone)
                var reading = try Catalog.readings(db, ofRows: [row])[row] ?? ReceiptReading(extractor: "", fields: [:])
                let names = try (fields ?? reading.fields.keys.sorted()).map(Self.fieldName)
                for name in names where reading.fields[name] == nil {
                    throw VaultError.bad("receipt \(id) has no filled or suggested \(name) to accept")
                }
                var changed = false
                for name in names {
                    guard let field = reading.fields[name] else { continue }
                    if !field.filled, receipt.value(ofRead: name) == nil {
                        receipt.set(read: name, to: try Self.canonical(ReadField(rawValue: name)!, field.value))
                        changed = true
                    }
                    try Self.learn(w, name: name, reading: field, confirmed: receipt.value(ofRead: name) ?? field.value,
                              merchant: receipt.merchant ?? reading.fields["merchant"]?.value)
                    reading.fields[name] = nil
                }
                if changed {
                    receipt.modifiedAt = w.now
                    try w.changeReceipt(receipt)
                }
                try w.setReading(reading, row: row)
                return try views(db, [receipt])[0]
            }
        }
    }

    /// An edit confirms what it sets: those fields leave the receipt's reading, and what the person
    /// wrote teaches the reader (called inside the edit's transaction).
    func confirmReading(_ w: CatalogWriter, _ receipt: Receipt, setting changes: ReceiptMetadata) throws {
        let db = w.db
        guard let row = try Catalog.receiptRow(db, id: receipt.id), var reading = try Catalog.readings(db, ofRows: [row])[row] else { return }
        for name in Self.readFields.map(\.rawValue) where changes.value(ofRead: name) != nil {
            guard let field = reading.fields[name] else { continue }
            if let value = receipt.value(ofRead: name) {
                try Self.learn(w, name: name, reading: field, confirmed: value, merchant: receipt.merchant ?? reading.fields["merchant"]?.value)
            }
            reading.fields[name] = nil
        }
        try w.setReading(reading, row: row)
    }

    /// A merchant confirmed or renamed becomes the alias of the header line it was read from; a date
    /// confirmed where the print left the day order open remembers that order for the merchant.
    static func learn(_ w: CatalogWriter, name: String, reading: FieldReading, confirmed: String, merchant: String?) throws {
        switch name {
        case "merchant":
            let key = ReceiptReader.aliasKey(reading.line)
            if !key.isEmpty { try w.setMerchantAlias(headerKey: key, merchant: confirmed) }
        case "date":
            guard let merchant else { return }
            for printed in DateScanner.dates(in: reading.line) where printed.settled == nil {
                for order in [DateOrder.dayFirst, .monthFirst] where printed.reading(order)?.description == confirmed {
                    try w.setDateOrder(merchantKey: ReceiptReader.aliasKey(merchant), order: order.rawValue)
                }
            }
        default:
            return
        }
    }

    /// A version of a receipt pulled from the server ended the review of fields of its reading here:
    /// another member confirmed or corrected them (on their vault or in the web view), and what they
    /// confirmed teaches this vault as its own `review accept` would (called in the pull's transaction).
    public static func learnFromPulled(_ w: CatalogWriter, before: ReceiptReading, after: ReceiptReading, receipt: Receipt) throws {
        for (name, field) in before.fields.sorted(by: { $0.key < $1.key }) where after.fields[name] == nil {
            guard let value = receipt.value(ofRead: name) else { continue }
            try learn(w, name: name, reading: field, confirmed: value, merchant: receipt.merchant ?? before.fields["merchant"]?.value)
        }
    }

    /// Receipts with filled or suggested fields left to review, oldest reading first.
    public func forEachToReview(zone: String? = nil, _ body: (ReceiptView) throws -> Void) throws {
        try wrapped {
            try catalog.read { db in
                if let zone { _ = try requireZone(db, zone) }
                var after: Int64 = 0
                while true {
                    let rows = try Catalog.rowsToReview(db, after: after, limit: 256)
                    guard let last = rows.last else { return }
                    after = last
                    let receipts = try Catalog.receipts(db, ofRows: rows)
                    for receipt in receipts where zone == nil || receipt.zone == zone {
                        let view = try views(db, [receipt])[0]
                        if !view.filled.isEmpty || !view.suggestions.isEmpty { try body(view) }
                    }
                }
            }
        }
    }

    /// The text extracted from each of a receipt's files (nil where none is yet), in the files' order.
    public func extractedTexts(_ idOrPrefix: String) throws -> [ExtractedText] {
        try wrapped {
            try catalog.read { db in
                let id = try resolveReceipt(db, idOrPrefix)
                guard let row = try Catalog.receiptRow(db, id: id) else { throw VaultError(.notFound, "no receipt \(idOrPrefix)") }
                let texts = try Catalog.texts(db, ofRow: row, extractor: TextExtractor.version)
                return try Catalog.files(db, ofRows: [row])[row, default: []].map { file in
                    ExtractedText(filename: file.filename, text: texts.first { $0.filename == file.filename }?.text)
                }
            }
        }
    }

    /// The vault's locale, which says the day order of a date the receipt leaves open.
    static let localeSetting = "locale"

    public func setLocale(_ locale: String) throws {
        guard locale.count <= 35, locale.allSatisfy({ $0.isASCII && ($0.isLetter || $0 == "-" || $0 == "_") }),
              DateOrder(locale: locale) != nil else {
            throw VaultError.bad("invalid locale '\(locale)': give a language and region such as en-US, de-DE or en-MY")
        }
        try wrapped { try mutate { w in try w.setSetting(Self.localeSetting, locale) } }
    }

    public func configuration() throws -> [String: String] {
        try wrapped { try catalog.read { db in try Catalog.setting(db, Self.localeSetting).map { ["locale": $0] } ?? [:] } }
    }

    // MARK: - Fields by name

    static func fieldName(_ text: String) throws -> String {
        let name = text.trimmingCharacters(in: .whitespaces).lowercased()
        guard readFields.map(\.rawValue).contains(name) else {
            throw VaultError.bad("unknown field '\(text)': give merchant, date, total or currency")
        }
        return name
    }

    static func canonical(_ field: ReadField, _ value: String) throws -> String {
        switch field {
        case .merchant: return try Validate.text(value, field: "merchant")
        case .date: return try Validate.date(value)
        case .total, .tax: return try Validate.total(value)
        case .currency: return try Validate.currency(value)
        }
    }
}
