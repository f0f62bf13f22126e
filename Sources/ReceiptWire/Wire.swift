/// Codable request and response bodies of the sync protocol (docs/PROTOCOL.md), shared by the client
/// (ReceiptSync) and the server (ReceiptServer). Nothing else lives here.

/// The protocol's version prefix: every endpoint is under `/v1/`.
public enum WireProtocol {
    public static let version = "v1"
    /// Additions within v1 that old peers ignore: 2 (2026-11-25) adds a receipt's claim fields
    /// (`status`, `claim`, `reimbursedOn`); 3 adds extracted text (`/v1/text`) and the revision
    /// exchange (`Receipt-Revision`); 4 the account's text counter (`textSeq` of `GET /v1/account`);
    /// 5 many texts in one upload (`POST /v1/text/put`); 6 a receipt's readings (`filled`,
    /// `filledLines`, `suggestions`). See "Revisions" in docs/PROTOCOL.md.
    public static let revision = 6
    /// Most records a pull returns in one page.
    public static let maxPageSize = 500
    /// Default page size of a pull.
    public static let defaultPageSize = 200
    /// Most records one push may carry.
    public static let maxPushRecords = 500
    /// Most addresses one `blobs/want` request may carry.
    public static let maxWantBlobs = 5000
}

/// An error body: every non-2xx response carries one.
public struct WireError: Codable, Sendable, Equatable {
    public var error: String
    public init(error: String) { self.error = error }
}

/// `GET /v1/account`: who the token belongs to.
public struct WireAccount: Codable, Sendable, Equatable {
    public var account: String
    /// The server's protocol revision (absent from servers before revision 3).
    public var revision: Int?
    /// The account's text counter (docs/PROTOCOL.md, "Extracted text"; absent before revision 4):
    /// it moves whenever a text the account can read is stored on the server.
    public var textSeq: Int64?
    public init(account: String, revision: Int? = WireProtocol.revision, textSeq: Int64? = nil) {
        self.account = account
        self.revision = revision
        self.textSeq = textSeq
    }
}

/// A role on a zone. The owner's role is `owner`; participants are `read` or `write`.
public enum WireRole: String, Codable, Sendable, CaseIterable {
    case owner, read, write
}

/// One zone the caller can see.
public struct WireZone: Codable, Sendable, Equatable {
    public var owner: String
    public var name: String
    public var role: WireRole
    /// True when the zone has at least one participant (for the owner) or is someone else's (for a participant).
    public var shared: Bool
    public init(owner: String, name: String, role: WireRole, shared: Bool) {
        self.owner = owner
        self.name = name
        self.role = role
        self.shared = shared
    }
}

/// `GET /v1/zones`.
public struct WireZoneList: Codable, Sendable, Equatable {
    public var zones: [WireZone]
    public init(zones: [WireZone]) { self.zones = zones }
}

/// One participant of a zone (`GET /v1/zones/{owner}/{name}/shares`).
public struct WireShare: Codable, Sendable, Equatable {
    public var account: String
    public var role: WireRole
    public init(account: String, role: WireRole) {
        self.account = account
        self.role = role
    }
}

public struct WireShareList: Codable, Sendable, Equatable {
    public var shares: [WireShare]
    public init(shares: [WireShare]) { self.shares = shares }
}

/// `PUT /v1/zones/{owner}/{name}/shares/{account}` body.
public struct WireShareRequest: Codable, Sendable, Equatable {
    public var role: WireRole
    public init(role: WireRole) { self.role = role }
}

/// An attachment as it travels: the blob's address and original size, a file name, a media type.
public struct WireAttachment: Codable, Sendable, Equatable, Hashable {
    public var sha256: String
    public var size: Int64
    public var filename: String
    public var mediaType: String
    public init(sha256: String, size: Int64, filename: String, mediaType: String) {
        self.sha256 = sha256
        self.size = size
        self.filename = filename
        self.mediaType = mediaType
    }
}

/// A receipt's content as it travels. The zone is given by the URL; the id by the enclosing record.
public struct WireReceipt: Codable, Sendable, Equatable {
    public var merchant: String?
    public var date: String?
    public var total: String?
    public var currency: String?
    public var category: String?
    public var note: String?
    public var tags: [String]
    /// In display order.
    public var attachments: [WireAttachment]
    public var createdAt: Int64
    public var modifiedAt: Int64
    /// The claim (protocol revision 2): `submitted`, `reimbursed` or `denied` (absent: `none`), the
    /// insurer's reference, the day it was reimbursed. Absent in a revision-1 peer's records.
    public var status: String?
    public var claim: String?
    public var reimbursedOn: String?
    /// What a vault read from the receipt's text and no person has confirmed (revision 6; absent when
    /// none, and in an older peer's records): the fields it filled (sorted names of `readFields`, whose
    /// values are the receipt's own), the text line each came from, and proposals it did not fill.
    /// WireReading.swift has their rules.
    public var filled: [String]?
    public var filledLines: [String: String]?
    public var suggestions: [String: WireSuggestion]?

    public init(merchant: String? = nil, date: String? = nil, total: String? = nil, currency: String? = nil,
                category: String? = nil, note: String? = nil, tags: [String] = [], attachments: [WireAttachment] = [],
                createdAt: Int64, modifiedAt: Int64, status: String? = nil, claim: String? = nil, reimbursedOn: String? = nil,
                filled: [String]? = nil, filledLines: [String: String]? = nil, suggestions: [String: WireSuggestion]? = nil) {
        self.merchant = merchant
        self.date = date
        self.total = total
        self.currency = currency
        self.category = category
        self.note = note
        self.tags = tags
        self.attachments = attachments
        self.createdAt = createdAt
        self.modifiedAt = modifiedAt
        self.status = status
        self.claim = claim
        self.reimbursedOn = reimbursedOn
        self.filled = filled
        self.filledLines = filledLines
        self.suggestions = suggestions
    }
}

/// A record as the server holds it: the latest version of a receipt, or its tombstone.
public struct WireRecord: Codable, Sendable, Equatable {
    public var id: String
    /// Changes with every accepted write; a push must name the tag it was based on.
    public var changeTag: String
    /// nil for a tombstone (the receipt was deleted).
    public var receipt: WireReceipt?
    public init(id: String, changeTag: String, receipt: WireReceipt?) {
        self.id = id
        self.changeTag = changeTag
        self.receipt = receipt
    }
    public var deleted: Bool { receipt == nil }
}

/// `POST /v1/blobs/want` body: addresses the client is about to reference.
public struct WireWantRequest: Codable, Sendable, Equatable {
    public var blobs: [String]
    public init(blobs: [String]) { self.blobs = blobs }
}

/// `POST /v1/blobs/fetch` body: the blobs to send back as one bundle, in this order.
public typealias WireFetchRequest = WireWantRequest

/// `POST /v1/blobs/want` response: the subset the caller must upload before a record referencing
/// them is accepted (the server lacks them, or the caller has not shown it holds them).
public struct WireWantResponse: Codable, Sendable, Equatable {
    public var want: [String]
    public init(want: [String]) { self.want = want }
}

/// One record of a push: the new content (nil to delete), based on `baseTag` (nil: the client
/// believes the server has no record of this id).
public struct WirePushRecord: Codable, Sendable, Equatable {
    public var id: String
    public var baseTag: String?
    public var receipt: WireReceipt?
    public init(id: String, baseTag: String?, receipt: WireReceipt?) {
        self.id = id
        self.baseTag = baseTag
        self.receipt = receipt
    }
}

/// `POST /v1/zones/{owner}/{name}/push` body.
public struct WirePushRequest: Codable, Sendable, Equatable {
    public var records: [WirePushRecord]
    public init(records: [WirePushRecord]) { self.records = records }
}

/// The outcome of one pushed record.
public struct WirePushResult: Codable, Sendable, Equatable {
    public enum Status: String, Codable, Sendable {
        /// Accepted: `changeTag` is the record's new tag.
        case saved
        /// `baseTag` was stale: `server` is the server's current version (a tombstone when deleted).
        case conflict
        /// Refused (bad content, or a referenced blob was not uploaded): `error` says why.
        case rejected
    }
    public var id: String
    public var status: Status
    public var changeTag: String?
    public var server: WireRecord?
    public var error: String?
    public init(id: String, status: Status, changeTag: String? = nil, server: WireRecord? = nil, error: String? = nil) {
        self.id = id
        self.status = status
        self.changeTag = changeTag
        self.server = server
        self.error = error
    }
}

public struct WirePushResponse: Codable, Sendable, Equatable {
    public var results: [WirePushResult]
    public init(results: [WirePushResult]) { self.results = results }
}

/// `GET /v1/zones/{owner}/{name}/changes?since=TOKEN&limit=N`: the latest version of every record
/// changed after `since`, oldest change first, at most `limit`. `changeToken` resumes after the last
/// record of this page; `more` says whether another page follows.
public struct WireChangesResponse: Codable, Sendable, Equatable {
    public var records: [WireRecord]
    public var changeToken: String
    public var more: Bool
    public init(records: [WireRecord], changeToken: String, more: Bool) {
        self.records = records
        self.changeToken = changeToken
        self.more = more
    }
}

/// Names of accounts and zones: 1–64 characters of `A–Z a–z 0–9 . _ -`, not starting with `.` or `-`.
public enum WireName {
    public static func isValid(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...64).contains(bytes.count), bytes[0] != UInt8(ascii: "."), bytes[0] != UInt8(ascii: "-") else {
            return false
        }
        return bytes.allSatisfy { c in
            (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122)
                || c == UInt8(ascii: ".") || c == UInt8(ascii: "_") || c == UInt8(ascii: "-")
        }
    }

    /// A receipt id: a 36-character UUID.
    public static func isValidRecordID(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        guard bytes.count == 36 else { return false }
        for (i, c) in bytes.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                if c != UInt8(ascii: "-") { return false }
            } else if !isHex(c) {
                return false
            }
        }
        return true
    }

    static func isHex(_ c: UInt8) -> Bool {
        (c >= 48 && c <= 57) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70)
    }

    /// A blob address: 64 lowercase hex characters.
    public static func isValidBlobAddress(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.count == 64 && bytes.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
    }
}

extension WireReceipt {
    /// Most characters in one text field, most tags, most attachments of one receipt.
    public static let maxFieldLength = 4096
    public static let maxTags = 256
    public static let maxAttachments = 1024

    /// Why this content cannot be stored in a vault's catalog (one sentence), or nil when it can.
    /// The server refuses such a record, so a bad push can never wedge another member's pull.
    /// Metadata follows `ReceiptFields`, in its canonical form: a vault sends only what its own
    /// checks gave, so a push of `37,80` or `usd` is refused with the form to send instead.
    public func validationError() -> String? {
        func text(_ field: String) -> (String) throws -> String { { try ReceiptFields.text($0, field: field) } }
        let rules: [(String, String?, (String) throws -> String)] = [
            ("merchant", merchant, text("merchant")), ("date", date, ReceiptFields.date), ("total", total, ReceiptFields.total),
            ("currency", currency, ReceiptFields.currency), ("category", category, text("category")), ("note", note, text("note")),
            ("claim", claim, text("claim")), ("reimbursement date", reimbursedOn, ReceiptFields.date),
        ] + tags.map { ("tag", $0, text("tag")) }
        for (name, value, rule) in rules {
            guard let value else { continue }
            // Absent, not empty: what a vault's catalog and the web forms store for a field left blank.
            if value.isEmpty && name != "tag" { return "the \(name) is empty: leave it out" }
            do {
                let canonical = try rule(value)
                if canonical != value { return "the \(name) '\(value)' is not in its canonical form: send '\(canonical)'" }
            } catch {
                return "\(error)"
            }
        }
        if let status, !["submitted", "reimbursed", "denied"].contains(status) {
            return "the status \(status) is not submitted, reimbursed or denied"
        }
        if let problem = readingError() { return problem }
        if tags.count > Self.maxTags { return "more than \(Self.maxTags) tags" }
        if attachments.count > Self.maxAttachments { return "more than \(Self.maxAttachments) attachments" }
        var seen = Set<String>()
        for a in attachments {
            if !WireName.isValidBlobAddress(a.sha256) { return "the attachment address \(a.sha256) is not 64 lowercase hex digits" }
            if !seen.insert(a.sha256).inserted { return "the blob \(a.sha256) is attached twice" }
            if a.size < 0 { return "the attachment \(a.sha256) has a negative size" }
            if a.filename.count > Self.maxFieldLength || a.mediaType.count > Self.maxFieldLength {
                return "the attachment \(a.sha256) has a name or media type that is too long"
            }
            // A name, not a path (nor a string SQLite would cut): what the vault's import accepts.
            if a.filename.utf8.contains(0) || a.filename.utf8.contains(UInt8(ascii: "/")) {
                return "the attachment \(a.sha256) has a file name with a NUL or '/'"
            }
        }
        return nil
    }
}
