import ReceiptCatalog
import ReceiptWire

/// A receipt with its attachments, as `list` and `show` present it, and as an export lists it
/// (`receipts.json`, `manifest.csv`): the vault's and the server's exports write the same shape.
public struct ReceiptView: Codable, Sendable, Equatable {
    public struct File: Codable, Sendable, Equatable {
        public var sha256: String
        public var filename: String
        public var size: Int64
        public var mediaType: String

        public init(sha256: String, filename: String, size: Int64, mediaType: String) {
            self.sha256 = sha256
            self.filename = filename
            self.size = size
            self.mediaType = mediaType
        }
    }

    public var id: String
    public var zone: String
    public var merchant: String?
    public var date: String?
    public var total: String?
    public var currency: String?
    public var category: String?
    public var note: String?
    public var tags: [String]
    public var attachments: [File]
    /// The claim: `none`, `submitted`, `reimbursed` or `denied`; its reference; the day it was paid.
    public var status: String = ClaimStatus.none.rawValue
    public var claim: String?
    public var reimbursedOn: String?
    /// Fields the vault filled from the receipt's text that no person has confirmed or typed.
    public var filled: [String] = []
    /// Fields the text suggests but did not make certain, by name.
    public var suggestions: [String: FieldSuggestion] = [:]

    public init(id: String, zone: String, merchant: String?, date: String?, total: String?, currency: String?,
                category: String?, note: String?, tags: [String], attachments: [File],
                status: String = ClaimStatus.none.rawValue, claim: String? = nil, reimbursedOn: String? = nil) {
        self.id = id
        self.zone = zone
        self.merchant = merchant
        self.date = date
        self.total = total
        self.currency = currency
        self.category = category
        self.note = note
        self.tags = tags
        self.attachments = attachments
        self.status = status
        self.claim = claim
        self.reimbursedOn = reimbursedOn
    }

    /// A receipt of a server's zone `zone` in the `list` shape, for exports made from the server's
    /// records (the web view's download): the same names, manifest and listing as the vault's.
    public init(id: String, zone: String, wire r: WireReceipt) {
        self.init(id: id, zone: zone, merchant: r.merchant, date: r.date, total: r.total, currency: r.currency,
                  category: r.category, note: r.note, tags: r.tags,
                  attachments: r.attachments.map { File(sha256: $0.sha256, filename: $0.filename, size: $0.size, mediaType: $0.mediaType) },
                  status: r.status ?? ClaimStatus.none.rawValue, claim: r.claim, reimbursedOn: r.reimbursedOn)
        // As the vault's view: a filled field that holds a value, a suggestion for a field still blank.
        filled = (r.filled ?? []).filter { r.value(ofRead: $0) != nil }.sorted()
        suggestions = (r.suggestions ?? [:]).filter { r.value(ofRead: $0.key) == nil }
    }

    enum CodingKeys: String, CodingKey {
        case id, zone, merchant, date, total, currency, category, note, tags, attachments, status, claim, reimbursedOn
        case filled, suggestions
    }

    public func encode(to encoder: Encoder) throws {
        // Absent values are `null`, not missing keys: the contract's JSON shape.
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(zone, forKey: .zone)
        try c.encode(merchant, forKey: .merchant)
        try c.encode(date, forKey: .date)
        try c.encode(total, forKey: .total)
        try c.encode(currency, forKey: .currency)
        try c.encode(category, forKey: .category)
        try c.encode(note, forKey: .note)
        try c.encode(tags, forKey: .tags)
        try c.encode(attachments, forKey: .attachments)
        try c.encode(status, forKey: .status)
        try c.encode(claim, forKey: .claim)
        try c.encode(reimbursedOn, forKey: .reimbursedOn)
        try c.encode(filled, forKey: .filled)
        try c.encode(suggestions, forKey: .suggestions)
    }
}

/// A field the vault offers from a receipt's text, as `list`, `show` and `review` print it, and as
/// it travels to the other members' vaults.
public typealias FieldSuggestion = WireSuggestion
