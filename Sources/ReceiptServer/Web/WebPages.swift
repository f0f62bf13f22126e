import BlobStore
import Foundation
import Hummingbird
import ReceiptWire

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
        let receipts: [[String: Any]] = result.receipts.map { row in
            let r = row.receipt
            var values: [String: Any] = [
                "id": row.id, "href": "\(base)/r/\(row.id)", "date": r.date ?? "", "merchant": r.merchant ?? Self.noMerchant,
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
        if query.page > 1 { values["previous"] = query.link(base, page: query.page - 1) }
        if query.page * Self.pageSize < result.matching { values["next"] = query.link(base, page: query.page + 1) }
        return html(WebTemplates.render("zone", values), title: Self.label(owner, name, session), session: session)
    }

    func receiptPage(owner: String, zone name: String, id: String, session: WebSession, message: String?) async throws -> Response {
        let (zone, row) = try await catalog.webReceipt(owner: owner, name: name, id: id, caller: session.account)
        let href = "\(Self.zonePath(owner, name))/r/\(row.id)"
        let r = row.receipt
        let shownMerchant = r.merchant ?? Self.noMerchant
        let status = r.status ?? "none"
        var values: [String: Any] = [
            "zoneHref": Self.zonePath(owner, name), "zoneLabel": Self.label(owner, name, session), "href": href,
            "id": row.id, "changeTag": row.changeTag, "merchant": shownMerchant, "status": status,
            "canWrite": zone.role != .read, "csrf": session.csrf,
            "attachments": r.attachments.enumerated().map { index, a -> [String: Any] in
                var file: [String: Any] = ["href": "\(href)/f/\(a.sha256)", "filename": a.filename, "mediaType": a.mediaType,
                                           "size": ByteCount.text(a.size), "isPDF": a.mediaType == "application/pdf",
                                           "alt": "File \(index + 1) of the receipt from \(shownMerchant)"]
                if WebFiles.inlineImageTypes.contains(a.mediaType) {
                    file["preview"] = "\(href)/f/\(a.sha256)"
                } else if a.mediaType == "application/pdf" {
                    file["preview"] = "\(href)/t/\(a.sha256)"
                    file["alt"] = "First page of file \(index + 1) of the receipt from \(shownMerchant)"
                }
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
            "reimbursedOn": r.reimbursedOn, "message": message,
        ]
        for case let (key, value?) in shown where !value.isEmpty { values[key] = value }
        return html(WebTemplates.render("receipt", values), title: r.merchant ?? "Receipt", session: session)
    }

    /// An upload none of whose files was kept, because one is already a receipt's of the zone.
    func alreadyThere(_ filename: String, receipt: String, session: WebSession) -> Response {
        html(WebTemplates.render("error", [
            "heading": "Already here", "message": "\(filename) is already a receipt of this zone: nothing was uploaded.",
            "advice": "Open that receipt to add to it, or upload the other files without this one.",
            "open": receipt, "openLabel": "Open the receipt that has \(filename)",
        ]), title: "Already here", session: session, status: .conflict)
    }
}
