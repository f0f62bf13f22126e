import Hummingbird
import WebForms

extension WebRoutes {
    /// A url-encoded form (a POST's body or a GET's query) as its fields; 400 when it is not one
    /// (bad percent escapes, a key sent as an array or twice).
    static func decodeForm(_ text: String, what: String) throws -> [String: String] {
        do {
            return try URLEncodedFormDecoder().decode([String: String].self, from: text)
        } catch {
            throw ServerError.bad("\(what) could not be read as a url-encoded form")
        }
    }
}

extension WebListQuery {
    /// `query` is the URL's query as sent (`+` for a space, which Hummingbird's `queryParameters`
    /// leave as it is, so the url-encoded form decoder reads it).
    init(query: String) throws {
        let fields = try WebRoutes.decodeForm(query, what: "the list's query")
        self = try ServerError.checking { try WebListQuery(fields: fields) }
    }
}

extension ServerError {
    /// What WebForms refuses (a value a browser sent that cannot be one of its kind) is a 400.
    static func checking<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as WebFormError {
            throw ServerError.bad(error.message)
        }
    }
}
