import Foundation

/// The receipt list's query, `?q=&from=&to=&merchant=&category=&status=&sort=&page=`, read from what a
/// form's GET sends. Every value is checked here, before anything reaches SQL or arithmetic: a value
/// that cannot be one of its kind is a 400 naming it, never a default and never a trap.
public struct WebListQuery: Sendable {
    public var filter = WebFilter()
    /// From 1 to `maxPage`, so that `offset` and the links' page numbers cannot overflow.
    public var page = 1
    /// The trimmed, non-empty values of `fields`, as typed (for the form and the page links).
    public var values: [String: String] = [:]
    /// On a receipt's page: its place in the filtered list (0 is the first), from the list's link;
    /// its previous and next receipt are found there.
    public var at: Int?

    public static let fields = ["q", "from", "to", "merchant", "category", "status", "sort"]
    /// `added` (the default: newest added first) or `date` (the receipt's date, newest first).
    public static let sorts = ["added", "date"]
    /// Fifty million receipts at 50 a page: far beyond any zone, far below any overflow.
    public static let maxPage = 1_000_000
    /// Receipts on a page of the list.
    public static let pageSize = 50

    public var offset: Int { (page - 1) * Self.pageSize }

    /// `decoded` is the URL's query read as a url-encoded form (ReceiptServer's `init(query:)`).
    public init(fields decoded: [String: String]) throws {
        for key in Self.fields {
            if let text = decoded[key]?.trimmingCharacters(in: .whitespaces), !text.isEmpty { values[key] = text }
        }
        filter.words = WebSearch.words(values["q"] ?? "")
        filter.from = try values["from"].map { try WebForm.date($0, "from") }
        filter.to = try values["to"].map { try WebForm.date($0, "to") }
        filter.merchant = values["merchant"]
        filter.category = values["category"]
        if let status = values["status"] {
            guard WebFilter.statuses.contains(status) else {
                throw WebFormError("the status \(status) is not one of \(WebFilter.statuses.joined(separator: ", "))")
            }
            filter.status = status
        }
        if let sort = values["sort"] {
            guard Self.sorts.contains(sort) else {
                throw WebFormError("the order \(sort.prefix(40)) is not one of \(Self.sorts.joined(separator: ", "))")
            }
            filter.byDate = sort == "date"
        }
        if let text = decoded["page"]?.trimmingCharacters(in: .whitespaces), !text.isEmpty {
            guard text.utf8.count <= 7, let n = Int(text), (1...Self.maxPage).contains(n) else {
                throw WebFormError("the page \(text.prefix(40)) is not a whole number from 1 to \(Self.maxPage)")
            }
            page = n
        }
        if let text = decoded["at"]?.trimmingCharacters(in: .whitespaces), !text.isEmpty {
            let last = Self.maxPage * Self.pageSize - 1
            guard text.utf8.count <= 9, let n = Int(text), (0...last).contains(n) else {
                throw WebFormError("the place in the list \(text.prefix(40)) is not a whole number from 0 to \(last)")
            }
            at = n
        }
    }

    /// The link to a receipt's page from the list (or its neighbour's), keeping the filter and its place.
    public func receiptLink(_ base: String, id: String, at place: Int) -> String {
        link("\(base)/r/\(id)", extra: [URLQueryItem(name: "at", value: "\(place)")])
    }

    /// The list's URL under `base` for page `n`, with this query's filters.
    public func link(_ base: String, page n: Int) -> String {
        link(base, extra: [URLQueryItem(name: "page", value: "\(n)")])
    }

    /// A URL under `base` with this query's filters and `extra` (the list's pages, its downloads).
    public func link(_ base: String, extra: [URLQueryItem]) -> String {
        var components = URLComponents()
        components.path = base
        components.queryItems = Self.fields.compactMap { key in values[key].map { URLQueryItem(name: key, value: $0) } } + extra
        return components.string ?? base
    }

    /// Whether any filter is set (the folded filter form then shows open).
    public var isFiltered: Bool { values.keys.contains { $0 != "sort" } }
}
