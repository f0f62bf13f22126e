/// Why the server refused something, as the rules and stores say it: what kind of refusal and one
/// sentence. Which HTTP status each kind is is the routes' business (`ServerError.code`, ServerApp.swift);
/// nothing below the routes names a status.
public struct ServerError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable, Equatable {
        /// A malformed request or value.
        case invalid
        /// No valid credential.
        case unauthenticated
        /// The caller sees the thing but may not do this to it (a reader pushing, a member sharing).
        case forbidden
        /// Absent, or not the caller's to see: the same answer either way.
        case notFound
        /// The present state forbids it: a name taken, a lock held, a zone still shared.
        case conflict
        /// A change token of an earlier zone of the same name.
        case gone
        /// More than a limit allows.
        case tooLarge
        /// A body of a type the route does not take.
        case unsupportedType
        /// Well-formed but not acceptable content.
        case unprocessable
        /// A plain connection where TLS is required.
        case upgradeRequired
        /// Over a rate limit (`retryAfter` says for how long).
        case tooManyRequests
        /// The change would take an account past its storage quota.
        case overQuota
        /// The server could not do it (a database it cannot open, a failed hash).
        case failed
        /// A status the HTTP framework decided itself (an unknown route, a method not allowed).
        case framework(Int)
    }

    public let kind: Kind
    public let message: String
    /// Seconds, for `.tooManyRequests`.
    public var retryAfter: Int?
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
    public var description: String { message }

    static func notFound(_ what: String) -> ServerError { ServerError(.notFound, "\(what) was not found") }
    static func bad(_ message: String) -> ServerError { ServerError(.invalid, message) }
}
