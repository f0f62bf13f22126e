import Foundation
import ReceiptWire
import WebForms

// What a browser (or anyone) sends the web view as text: the list's query (filters, page, dates),
// a url-encoded form (sign-in, edit), the upload's metadata fields and multipart headers, the
// `Origin`/`Referer` of a POST; and the amounts the list sums. Each is either refused with a
// sentence naming it (the routes' 400) or yields values within the bounds the server then computes
// with: never a trap. (The url-encoded form itself is Hummingbird's to read, in ReceiptServer; its
// fields are made here from the text by Foundation's query parser, which refuses nothing.)
public func checkWebForm(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    checkListQuery(text)
    checkForm(text)
    checkUploadHeaders(text)
    _ = WebHeaders.isSameOrigin(text, authority: "127.0.0.1:8080", scheme: "http")
    _ = WebHeaders.isSameOrigin("http://127.0.0.1:8080", authority: text, scheme: "https")
}

/// The fields of `text` read as a query (the first of a key sent twice); none when it is not one.
func formFields(_ text: String) -> [String: String] {
    let items = URLComponents(string: "?" + text)?.queryItems ?? []
    return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
}

func refusedAsBadInput(_ body: () throws -> Void) {
    do {
        try body()
    } catch let error as WebFormError {
        precondition(!error.message.isEmpty, "refused without saying why")
    } catch {
        preconditionFailure("refused with an error that is no WebFormError: \(error)")
    }
}

func checkListQuery(_ text: String) {
    refusedAsBadInput {
        let query = try WebListQuery(fields: formFields(text))
        precondition((1...WebListQuery.maxPage).contains(query.page))
        precondition(query.offset >= 0 && query.offset % WebListQuery.pageSize == 0)
        _ = query.link("/z/a/b", page: query.page + 1)
        for day in [query.filter.from, query.filter.to].compactMap({ $0 }) { precondition(day.utf8.count == 10) }
        if let status = query.filter.status { precondition(WebFilter.statuses.contains(status)) }
        precondition(query.filter.words.count <= 10 && query.filter.words.allSatisfy(WebSearch.isWord))
        if let match = WebSearch.match(query.filter.words) { precondition(!match.utf8.contains(0)) }
    }
}

func checkForm(_ text: String) {
    refusedAsBadInput {
        let fields = formFields(text)
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
    _ = WebHeaders.boundary(text)
    for key in ["name", "filename"] { _ = WebHeaders.parameter(key, in: text) }
    if let refusal = WebHeaders.refusal(ofFileName: text) {
        precondition(!refusal.message.isEmpty)
    } else {
        let name = WebHeaders.safeName(text)
        precondition(!name.isEmpty && name.utf8.count <= 255 && !name.contains("/") && !name.utf8.contains(0))
    }
}
