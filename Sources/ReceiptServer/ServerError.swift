/// An error a server operation reports: its HTTP status and one sentence.
public struct ServerError: Error, CustomStringConvertible, Sendable {
    public let code: Int
    public let message: String
    /// Seconds, for a 429.
    public var retryAfter: Int?
    public init(_ code: Int, _ message: String) {
        self.code = code
        self.message = message
    }
    public var description: String { message }

    static func notFound(_ what: String) -> ServerError { ServerError(404, "\(what) was not found") }
    static func bad(_ message: String) -> ServerError { ServerError(400, message) }
}
