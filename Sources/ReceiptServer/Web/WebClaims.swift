import Foundation
import Hummingbird
import ReceiptWire

/// The claim workflow in the browser: a receipt's claim status, reference, reimbursed-on date and
/// tags on its edit form, and the same for many receipts at once from the list (`POST
/// /z/OWNER/ZONE/bulk`). Both go through the sync API's push, so each changed receipt is one record
/// change that every member's vault pulls, all in one push; a receipt someone changed meanwhile is
/// not overwritten, and the answer says how many were saved.
struct WebClaimFields {
    var status: String?
    var claim: String?
    var reimbursedOn: String?
    var tags: [String] = []
    var category: String?
    /// The fields the form had at all (a form of an older page may lack the claim fields).
    var sent: Set<String> = []

    /// Most receipts one bulk change may name (a page shows 50).
    static let maxBulk = 500

    /// The fields as sent, trimmed; a blank one is nil. `status` must be a claim status (`none`
    /// included), the date a date, a tag free of `;` (a manifest's separator).
    init(_ fields: [String: String]) throws {
        func value(_ key: String) throws -> String? {
            guard let text = fields[key]?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else { return nil }
            do { return try ReceiptFields.text(text, field: key) } catch let error as FieldError { throw ServerError.bad(error.description) }
        }
        sent = Set(fields.keys)
        status = try value("status")?.lowercased()
        if let status, !WebRoutes.claimStatuses.contains(status) {
            throw ServerError.bad("the claim status \(status.prefix(40)) is not one of \(WebRoutes.claimStatuses.joined(separator: ", "))")
        }
        claim = try value("claim")
        reimbursedOn = try value("reimbursedOn").map { try WebRoutes.checkDate($0, "reimbursed-on") }
        category = try value("category")
        tags = try (value("tags") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        if let bad = tags.first(where: { $0.contains(";") }) {
            throw ServerError.bad("the tag \(bad.prefix(40)) contains ';', which separates tags in a manifest")
        }
    }

    /// The edit form: every claim field it has is set as sent (a blank one clears it; tags are
    /// replaced); one it lacks stays as it is.
    func setAll(on receipt: inout WireReceipt) {
        if sent.contains("status") { receipt.status = status == "none" ? nil : status }
        if sent.contains("claim") { receipt.claim = claim }
        if sent.contains("reimbursedOn") { receipt.reimbursedOn = reimbursedOn }
        if sent.contains("tags") { receipt.tags = tags }
    }

    /// The bulk form: what was filled in is set (status `none` clears the claim), tags are added,
    /// a blank field leaves each receipt's own value. False when nothing was filled in.
    func apply(to receipt: inout WireReceipt) -> Bool {
        if let category { receipt.category = category }
        if let status { receipt.status = status == "none" ? nil : status }
        if let claim { receipt.claim = claim }
        if let reimbursedOn { receipt.reimbursedOn = reimbursedOn }
        for tag in tags where !receipt.tags.contains(tag) { receipt.tags.append(tag) }
        return category != nil || status != nil || claim != nil || reimbursedOn != nil || !tags.isEmpty
    }
}

extension WebRoutes {
    /// Later than the version it replaces, which a push may have dated as late as Int64.max.
    static func modifiedNow(after previous: Int64) -> Int64 {
        max(ServerRules.now(), previous == .max ? .max : previous + 1)
    }

    /// `POST /z/OWNER/ZONE/bulk`: the checked receipts (`id`, repeated) get the filled-in fields.
    func bulk(_ request: Request, context: ServerContext) async throws -> Response {
        let owner = try context.name("owner"), name = try context.name("zone")
        return try await form(request, context: context) { session, fields, ids in
            let zone = try await catalog.webZone(owner: owner, name: name, caller: session.account)
            guard zone.role != .read else {
                throw ServerError(.forbidden, "the account \(session.account.name) may read \(owner)/\(name) but not edit its receipts")
            }
            guard !ids.isEmpty else { throw ServerError.bad("no receipt was selected: tick the receipts to change first") }
            guard ids.count <= WebClaimFields.maxBulk else {
                throw ServerError.bad("\(ids.count) receipts were selected; at most \(WebClaimFields.maxBulk) can be changed at once")
            }
            let claims = try WebClaimFields(fields)
            var records: [WirePushRecord] = []
            for id in Set(ids).sorted() {
                let (_, row) = try await catalog.webReceipt(owner: owner, name: name, id: id, caller: session.account)
                var receipt = row.receipt
                guard claims.apply(to: &receipt) else {
                    throw ServerError.bad("nothing to set: fill in a category, claim status, claim reference or tags")
                }
                receipt.modifiedAt = Self.modifiedNow(after: row.receipt.modifiedAt)
                records.append(WirePushRecord(id: row.id, baseTag: row.changeTag, receipt: receipt))
            }
            let result = try await catalog.push(WirePushRequest(records: records), owner: owner, name: name, caller: session.account)
            let saved = result.results.filter { $0.status == .saved }.count
            if let refused = result.results.first(where: { $0.status != .saved && $0.status != .conflict }) {
                throw ServerError.bad((refused.error ?? "the change was refused") + " (\(saved) of the \(records.count) receipts were saved)")
            }
            guard saved == records.count else {
                throw ServerError(.conflict, "\(records.count - saved) of the \(records.count) receipts were changed by someone else "
                    + "meanwhile; \(saved) were saved: open the list again and redo the change for the others")
            }
            return redirect(Self.zonePath(owner, name))
        }
    }
}
