import BlobStore
import Foundation
import Hummingbird
import ReceiptText
import ReceiptWire
import WebForms

/// The zone's list and the receipt's page: what each shows, as values for their templates.
extension WebRoutes {
    /// Shown for a receipt without a merchant; never stored (a blank field stays blank).
    static let noMerchant = "(no merchant)"
    /// The claim statuses a receipt can be set to (`none` clears it).
    static let claimStatuses = ["none", "submitted", "reimbursed", "denied"]

    func zonePage(_ request: Request, context: ServerContext, session: WebSession) async throws -> Response {
        let owner = try context.name("owner"), name = try context.name("zone")
        let query = try WebListQuery(query: request.uri.query ?? "")
        let filter = query.filter
        let result = try await catalog.webZonePage(owner: owner, name: name, filter: filter, offset: query.offset,
                                                   limit: Self.pageSize, caller: session.account)
        let base = Self.zonePath(owner, name)
        let receipts: [[String: Any]] = result.receipts.enumerated().map { index, row in
            let r = row.receipt
            var values: [String: Any] = [
                "id": row.id, "href": query.receiptLink(base, id: row.id, at: query.offset + index), "date": r.date ?? "", "merchant": r.merchant ?? Self.noMerchant,
                "category": r.category ?? "", "total": WebAmounts.display(r.total, currency: r.currency),
                "files": r.attachments.count, "status": r.status ?? "",
            ]
            if let first = r.attachments.first { values["thumb"] = "\(base)/r/\(row.id)/t/\(first.sha256)" }
            return values
        }
        var values: [String: Any] = [
            "label": Self.label(owner, name, session), "role": result.zone.role.rawValue, "href": base,
            "count": result.matching, "receipts": receipts, "hasReceipts": !receipts.isEmpty,
            "totals": result.totals.map { ["total": WebAmounts.display($0.total, currency: $0.currency), "count": $0.count] as [String: Any] },
            "hasTotals": !result.totals.isEmpty, "canWrite": result.zone.role != .read, "csrf": session.csrf,
            "filtered": query.isFiltered, "order": filter.byDate ? "newest date first" : "newest added first",
            "filter": ["q": query.values["q"] ?? "", "from": filter.from ?? "", "to": filter.to ?? "",
                       "merchant": filter.merchant ?? "", "category": filter.category ?? ""],
            "statuses": [["value": "", "label": "any", "selected": filter.status == nil]]
                + WebFilter.statuses.map { ["value": $0, "label": $0, "selected": filter.status == $0] },
            "sorts": [["value": "added", "label": "newest added first", "selected": !filter.byDate],
                      ["value": "date", "label": "newest date first", "selected": filter.byDate]],
            "claimStatuses": Self.claimStatuses,
        ]
        let toReview = try await catalog.webReviewCount(owner: owner, name: name, caller: session.account)
        if toReview > 0 { values["toReview"] = toReview }
        values["downloadZip"] = query.link("\(base)/download", extra: [URLQueryItem(name: "as", value: "zip")])
        values["downloadClaim"] = query.link("\(base)/download", extra: [URLQueryItem(name: "as", value: "claim")])
        if query.page > 1 { values["previous"] = query.link(base, page: query.page - 1) }
        if query.page * Self.pageSize < result.matching { values["next"] = query.link(base, page: query.page + 1) }
        return html(WebTemplates.render("zone", values), title: Self.label(owner, name, session), session: session)
    }

    func receiptPage(owner: String, zone name: String, id: String, query: WebListQuery, session: WebSession) async throws -> Response {
        let (zone, row) = try await catalog.webReceipt(owner: owner, name: name, id: id, caller: session.account)
        let base = Self.zonePath(owner, name)
        let href = "\(base)/r/\(row.id)"
        let r = row.receipt
        let shownMerchant = r.merchant ?? Self.noMerchant
        let status = r.status ?? "none"
        let texts = try await extractedTexts(of: r.attachments, caller: session.account)
        var values: [String: Any] = [
            "zoneHref": query.at.map { query.link(base, page: $0 / Self.pageSize + 1) } ?? base,
            "zoneLabel": Self.label(owner, name, session), "href": href,
            "id": row.id, "changeTag": row.changeTag, "merchant": shownMerchant, "status": status,
            "canWrite": zone.role != .read, "csrf": session.csrf,
            "attachments": try await pdfPageCounts(r.attachments).enumerated().map { index, pair -> [String: Any] in
                let (a, pages) = pair
                var file: [String: Any] = ["href": "\(href)/f/\(a.sha256)", "filename": a.filename, "mediaType": a.mediaType,
                                           "size": ByteCount.text(a.size), "isPDF": a.mediaType == "application/pdf",
                                           "alt": "File \(index + 1) of the receipt from \(shownMerchant)"]
                file["preview"] = Self.preview(of: a, receipt: href)
                if a.mediaType == "application/pdf" {
                    file["alt"] = "First page of file \(index + 1) of the receipt from \(shownMerchant)"
                    // The other pages on demand, each a link to its own image.
                    if pages > 1 {
                        file["pages"] = (2...min(pages, Self.maxPageLinks)).map { ["href": "\(href)/t/\(a.sha256)?page=\($0)", "page": $0] }
                        file["pageCount"] = pages
                    }
                }
                if let text = texts[a.sha256] { file["text"] = text }
                return file
            },
            // The edit form gets the values as stored, so a save with no change changes nothing.
            "form": ["merchant": r.merchant ?? "", "date": r.date ?? "", "total": r.total ?? "", "currency": r.currency ?? "",
                     "category": r.category ?? "", "note": r.note ?? "", "tags": r.tags.joined(separator: ", "),
                     "claim": r.claim ?? "", "reimbursedOn": r.reimbursedOn ?? ""],
            "statusOptions": Self.claimStatuses.map { ["value": $0, "label": $0, "selected": $0 == status] as [String: Any] },
        ]
        // Absent rather than empty: a Mustache section shows for any string, the empty one too.
        let shown: [String: String?] = [
            "date": r.date, "total": r.total.map { WebAmounts.display($0, currency: r.currency) }, "category": r.category,
            "note": r.note, "tags": r.tags.isEmpty ? nil : r.tags.joined(separator: ", "), "claim": r.claim,
            "reimbursedOn": r.reimbursedOn,
        ]
        for case let (key, value?) in shown where !value.isEmpty { values[key] = value }
        if let at = query.at { try await addNeighbours(of: row.id, at: at, query: query, owner: owner, zone: name, into: &values, session: session) }
        return html(WebTemplates.render("receipt", values), title: r.merchant ?? "Receipt", session: session)
    }

    /// The picture of a file on a receipt's page: an image itself, a PDF's first page; nil for others.
    static func preview(of a: WireAttachment, receipt href: String) -> String? {
        if WebFiles.inlineImageTypes.contains(a.mediaType) { return "\(href)/f/\(a.sha256)" }
        return a.mediaType == "application/pdf" ? "\(href)/t/\(a.sha256)?page=1" : nil
    }

    /// The previous and next receipt of the filtered list around `id`, which the list's link put at
    /// `at`: read from the list's own query (three rows), so they follow its filter and order. When
    /// the list changed since and `id` is no longer there, the page has no such links.
    func addNeighbours(of id: String, at: Int, query: WebListQuery, owner: String, zone name: String,
                       into values: inout [String: Any], session: WebSession) async throws {
        let first = max(0, at - 1), base = Self.zonePath(owner, name)
        let window = try await catalog.webZonePage(owner: owner, name: name, filter: query.filter, offset: first, limit: 3,
                                                   caller: session.account)
        let ids = window.receipts.map(\.id)
        guard let index = ids.firstIndex(of: id) else { return }
        let place = first + index
        if index > 0 { values["previousReceipt"] = query.receiptLink(base, id: ids[index - 1], at: place - 1) }
        if index + 1 < ids.count { values["nextReceipt"] = query.receiptLink(base, id: ids[index + 1], at: place + 1) }
        values["place"] = "\(place + 1) of \(window.matching)"
    }

    /// Each attachment's extracted text (the newest extractor version the server has), at most
    /// `maxShownText` bytes of it, by address; none for a blob whose extraction failed.
    func extractedTexts(of attachments: [WireAttachment], caller: Account) async throws -> [String: String] {
        var found: [String: String] = [:]
        for version in TextExtractor.versions.reversed() {
            let missing = attachments.map(\.sha256).filter { found[$0] == nil }
            guard !missing.isEmpty else { break }
            for text in try await catalog.texts(missing, version: version, caller: caller, byteLimit: WireText.maxBytes).texts {
                guard let sha256 = text.sha256, let body = text.text?.trimmingCharacters(in: .whitespacesAndNewlines), !body.isEmpty
                else { continue }
                found[sha256] = body.utf8.count <= Self.maxShownText ? body
                    : String(decoding: body.utf8.prefix(Self.maxShownText), as: UTF8.self) + "\n… (the rest is in the file)"
            }
        }
        return found
    }

    /// Each attachment with its page count: a PDF's from poppler (kept once made), 1 otherwise.
    func pdfPageCounts(_ attachments: [WireAttachment]) async throws -> [(WireAttachment, Int)] {
        var counted: [(WireAttachment, Int)] = []
        for a in attachments {
            let blob = BlobID(hex: a.sha256)
            guard a.mediaType == "application/pdf", let blob, catalog.blobs.contains(blob) else { counted.append((a, 1)); continue }
            counted.append((a, await thumbnails.pageCount(blob) ?? 1))
        }
        return counted
    }

    /// Most page links a PDF's preview offers (a longer file is read in full by opening it).
    static let maxPageLinks = 30

    /// Most bytes of a file's text shown on its receipt's page (the page stays light on a phone).
    static let maxShownText = 8192

    /// An upload none of whose files was kept, because one is already a receipt's of the zone.
    func alreadyThere(_ filename: String, receipt: String, session: WebSession) -> Response {
        html(WebTemplates.render("error", [
            "heading": "Already here", "message": "\(filename) is already a receipt of this zone: nothing was uploaded.",
            "advice": "Open that receipt to add to it, or upload the other files without this one.",
            "open": receipt, "openLabel": "Open the receipt that has \(filename)",
        ]), title: "Already here", session: session, status: .conflict)
    }
}
