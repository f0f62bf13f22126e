import Foundation
import Hummingbird
import ReceiptWire
import WebForms

/// Where the review queue starts: the first receipt (by id) from `id`, or after it (a skip).
struct WebReviewStart: Sendable {
    var id = ""
    var inclusive = true
}

/// A step of the review queue: how many receipts of the zone carry readings, the one to review
/// now (nil: none from the start asked for), and the receipts it looks like a re-scan of.
struct WebReviewQueue: Sendable {
    let zone: VisibleZone
    let count: Int
    let row: WebReceiptRow?
    let twins: [String]

    static let maxTwins = 5
}

/// The review queue in the browser (issue #32 point 3; docs/PROTOCOL.md "Web view"): the receipts
/// whose fields a member's vault filled or suggested from their text, one at a time, with the image
/// and, for each such field, its value and the line of the text it came from. Accept (one field or
/// all) and Correct go through the sync API's push like the edit form: one record change, based on
/// the page's change tag, that every member's vault pulls. Skip is a link.
extension WebRoutes {
    static let fieldLabels = ["merchant": "Merchant", "date": "Date", "total": "Total", "currency": "Currency"]

    /// `GET /z/OWNER/ZONE/review[?from=ID|after=ID]`.
    func reviewPage(owner: String, zone name: String, query: String, session: WebSession) async throws -> Response {
        let start = try Self.reviewStart(query)
        let queue = try await catalog.webReviewQueue(owner: owner, name: name, start: start, caller: session.account)
        let base = Self.zonePath(owner, name)
        var values: [String: Any] = ["zoneHref": base, "zoneLabel": Self.label(owner, name, session), "count": queue.count]
        guard let row = queue.row else {
            values["empty"] = queue.count == 0 ? "Nothing to review: every field read from a receipt's text has been confirmed."
                : "Nothing more to review after the receipt you left."
            if queue.count > 0 { values["restart"] = "\(base)/review" }
            return html(WebTemplates.render("review", values), title: "To review", session: session)
        }
        let r = row.receipt, href = "\(base)/r/\(row.id)"
        let title = r.merchant ?? r.suggestions?["merchant"]?.value ?? Self.noMerchant
        var fields: [[String: Any]] = []
        for name in WireReceipt.readFields {
            let label = Self.fieldLabels[name] ?? name
            if r.isFilled(name), let value = r.value(ofRead: name) {
                fields.append(["name": name, "label": label, "value": value, "how": "filled in from the text",
                               "line": r.filledLines?[name] ?? ""])
            } else if let s = r.suggestions?[name] {
                fields.append(["name": name, "label": label, "value": s.value, "line": s.line,
                               "how": "suggested, \(Int((s.confidence * 100).rounded())) % sure"])
            }
        }
        values["receipt"] = [
            "id": row.id, "open": href, "title": title, "action": "\(href)/review", "changeTag": row.changeTag,
            "csrf": session.csrf, "canWrite": queue.zone.role != .read, "fields": fields,
            "skip": "\(base)/review?after=\(row.id)",
            "twins": queue.twins.map { ["href": "\(base)/r/\($0)"] },
        ] as [String: Any]
        if let first = r.attachments.first {
            values["preview"] = Self.preview(of: first, receipt: href) ?? "\(href)/t/\(first.sha256)"
            values["filename"] = first.filename
            values["alt"] = "The receipt from \(title)"
        }
        return html(WebTemplates.render("review", values), title: "To review: \(title)", session: session)
    }

    /// `POST /z/OWNER/ZONE/r/ID/review`: `accept` = a field's name or `all`, or `correct` = a field's
    /// name with its `value` (checked by the edit form's rules), based on `changeTag`.
    func reviewAction(owner: String, zone name: String, id: String, fields: [String: String], session: WebSession) async throws -> Response {
        let (zone, row) = try await catalog.webReceipt(owner: owner, name: name, id: id, caller: session.account)
        guard zone.role != .read else {
            throw ServerError(.forbidden, "the account \(session.account.name) may read \(owner)/\(name) but not confirm its receipts' fields")
        }
        var receipt = row.receipt
        let pending = (receipt.filled ?? []) + (receipt.suggestions ?? [:]).keys.sorted()
        if let accept = fields["accept"] {
            let names = accept == "all" ? pending : [try Self.readField(accept)]
            guard !names.isEmpty, names.allSatisfy(pending.contains) else {
                throw ServerError.bad("the receipt has no filled or suggested \(accept == "all" ? "field" : accept) to accept: open the review again")
            }
            do {
                try receipt.acceptReadings(names)
            } catch let error as FieldError {
                throw ServerError.bad("the suggestion cannot be taken as it is (\(error.description)): correct it instead")
            }
        } else if let correct = fields["correct"] {
            let field = try Self.readField(correct)
            // The edit form's own rules (WebMetadata): a decimal comma, a lowercase currency, a blank.
            let metadata = try ServerError.checking { try WebMetadata([field: fields["value"] ?? ""]) }
            guard let value = [metadata.merchant, metadata.date, metadata.total, metadata.currency].compactMap({ $0 }).first else {
                throw ServerError.bad("the corrected \(field) is blank: type its value, or skip this receipt")
            }
            let old = receipt
            receipt.set(read: field, to: value)
            receipt.settleReadings(after: old)
            receipt.filled?.removeAll { $0 == field } // corrected to what was filled: confirmed
            receipt.tidyReadings()
        } else {
            throw ServerError.bad("say what to do with the receipt: accept or correct")
        }
        // Then the same receipt while fields of it are left, else the next one.
        return try await save(receipt, of: row, baseTag: fields["changeTag"], owner: owner, zone: name, session: session,
                              then: "\(Self.zonePath(owner, name))/review?from=\(row.id)",
                              conflict: "open the review again (it shows the receipt as it is now) and accept or correct it there")
    }

    static func readField(_ text: String) throws -> String {
        guard WireReceipt.readFields.contains(text) else {
            throw ServerError.bad("the field \(text.prefix(40)) is not one of \(WireReceipt.readFields.joined(separator: ", "))")
        }
        return text
    }

    /// The review page's query: nothing, `from=ID` (that receipt or the next) or `after=ID` (the next).
    static func reviewStart(_ query: String) throws -> WebReviewStart {
        let values = try decodeForm(query, what: "the query")
        if let other = values.keys.first(where: { $0 != "from" && $0 != "after" }) {
            throw ServerError.bad("the review page takes from= or after=, not \(other.prefix(40))=")
        }
        guard values.count <= 1 else { throw ServerError.bad("the review page takes from= or after=, not both") }
        guard let (key, id) = values.first else { return WebReviewStart() }
        guard WireName.isValidRecordID(id) else { throw ServerError.bad("\(key)= takes a receipt id, not \(id.prefix(40))") }
        return WebReviewStart(id: id, inclusive: key == "from")
    }
}

extension WebTemplates {
    static let review = """
    <p><a href="{{zoneHref}}">← {{zoneLabel}}</a></p>
    <h1>To review ({{count}})</h1>
    {{#empty}}<p>{{empty}}</p>{{/empty}}
    {{#restart}}<p><a href="{{restart}}">Start again from the first</a></p>{{/restart}}
    {{#receipt}}
    <div class="receipt">
    <div class="preview">
    {{#preview}}<figure><a href="{{open}}"><img src="{{preview}}" alt="{{alt}}"></a><figcaption>{{filename}}</figcaption></figure>{{/preview}}
    {{^preview}}<p>No file.</p>{{/preview}}
    </div>
    <div class="details">
    <h2><a href="{{open}}">{{title}}</a></h2>
    {{#twins}}<p class="notice">Looks like a re-scan: <a href="{{href}}" class="twin">another receipt has the same merchant, date and total</a>.</p>{{/twins}}
    {{#fields}}
    <form method="post" action="{{action}}" class="review-field" aria-label="{{label}}">
    <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="changeTag" value="{{changeTag}}">
    <p><strong>{{label}}</strong> {{value}} <span class="how">({{how}})</span></p>
    <p class="line">From the line: <q>{{line}}</q></p>
    {{#canWrite}}<div class="review-actions">
    <label for="c-{{name}}" class="sr">{{label}}</label><input id="c-{{name}}" name="value" value="{{value}}">
    <button type="submit" name="correct" value="{{name}}">Correct</button>
    <button type="submit" name="accept" value="{{name}}">Accept</button>
    </div>{{/canWrite}}
    </form>
    {{/fields}}
    <div class="review-actions">
    {{#canWrite}}<form method="post" action="{{action}}"><input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="changeTag" value="{{changeTag}}"><button type="submit" name="accept" value="all">Accept all</button></form>{{/canWrite}}
    <a href="{{skip}}" rel="next">Skip</a>
    </div>
    </div>
    </div>
    {{/receipt}}
    """
}
