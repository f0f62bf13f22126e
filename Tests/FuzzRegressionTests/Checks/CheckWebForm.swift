import Foundation
@testable import ReceiptServer
import ReceiptWire

// What a browser (or anyone) sends the web view as text: the list's query (filters, page, dates),
// a url-encoded form (sign-in, edit), the upload's metadata fields and multipart headers, the
// `Origin`/`Referer` of a POST; and the amounts the list sums. Each is either refused with a 400
// naming it or yields values within the bounds the server then computes with: never a trap.
// (@testable: these are internal to ReceiptServer; tools/fuzz builds with -enable-testing.)
public func checkWebForm(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    checkListQuery(text)
    checkForm(text)
    checkUploadHeaders(text)
    _ = WebRoutes.isSameOrigin(text, authority: "127.0.0.1:8080", scheme: "http")
    _ = WebRoutes.isSameOrigin("http://127.0.0.1:8080", authority: text, scheme: "https")
}

func refusedAsBadInput(_ body: () throws -> Void) {
    do {
        try body()
    } catch let error as ServerError {
        precondition(error.code == 400 && !error.message.isEmpty, "refused with \(error.code): \(error.message)")
    } catch {
        preconditionFailure("refused with an error that is no ServerError: \(error)")
    }
}

func checkListQuery(_ text: String) {
    refusedAsBadInput {
        let query = try WebListQuery(query: text)
        precondition((1...WebListQuery.maxPage).contains(query.page))
        precondition(query.offset >= 0 && query.offset % WebRoutes.pageSize == 0)
        _ = query.link("/z/a/b", page: query.page + 1)
        for day in [query.filter.from, query.filter.to].compactMap({ $0 }) { precondition(day.utf8.count == 10) }
        if let status = query.filter.status { precondition(WebFilter.statuses.contains(status)) }
        precondition(query.filter.words.count <= 10 && query.filter.words.allSatisfy(WebSearch.isWord))
        if let match = WebSearch.match(query.filter.words) { precondition(!match.utf8.contains(0)) }
    }
}

func checkForm(_ text: String) {
    refusedAsBadInput {
        let fields = try WebRoutes.decodeForm(text, what: "the form")
        var totals = WebTotals()
        for (key, value) in fields {
            totals.add(total: value, currency: key, count: value.utf8.count)
            totals.add(sum: value, currency: nil, count: 1)
        }
        for total in totals.totals { _ = "\(total.total)" }
        refusedAsBadInput {
            let metadata = try WebMetadata(fields)
            let receipt = metadata.receipt(attachments: [], tags: [], createdAt: .max, modifiedAt: .max)
            // The form and the wire follow the same rules (ReceiptFields): what a form takes, a push takes.
            precondition(receipt.validationError() == nil, receipt.validationError() ?? "")
        }
    }
}

func checkUploadHeaders(_ text: String) {
    _ = WebRoutes.boundary(text)
    for key in ["name", "filename"] { _ = WebUploadReceiver.parameter(key, in: text) }
    if let refusal = WebUploadReceiver.refusal(ofFileName: text) {
        precondition(refusal.code == 400)
    } else {
        let name = WebUploadReceiver.safeName(text)
        precondition(!name.isEmpty && name.utf8.count <= 255 && !name.contains("/") && !name.utf8.contains(0))
    }
}
