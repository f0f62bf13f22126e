import Foundation

/// `postgres://USER[:PASS]@HOST[:PORT]/DB` (also `postgresql://`). A HOST that is a percent-encoded
/// absolute path (`%2Fvar%2Frun%2Fpostgresql`) names the folder of a Unix socket, as libpq reads it.
public struct PostgresURL: Sendable, Equatable, CustomStringConvertible {
    public let user: String
    public let password: String?
    public let host: String
    public let port: Int
    public let database: String

    public init(_ text: String) throws {
        let refusal = ServerError.bad("invalid --database \(Self.redacted(text)): use postgres://USER[:PASS]@HOST[:PORT]/DB")
        guard let parts = URLComponents(string: text), let scheme = parts.scheme,
              scheme == "postgres" || scheme == "postgresql",
              let user = parts.user, !user.isEmpty,
              let host = parts.host, !host.isEmpty else { throw refusal }
        let path = parts.path.hasPrefix("/") ? String(parts.path.dropFirst()) : parts.path
        guard !path.isEmpty, !path.contains("/") else { throw refusal }
        if let port = parts.port, !(1...65535).contains(port) { throw refusal }
        if let query = parts.query, !query.isEmpty {
            throw ServerError.bad("invalid --database \(Self.redacted(text)): query parameters (\(query)) are not supported")
        }
        self.user = user
        self.password = parts.password
        self.host = host.removingPercentEncoding ?? host
        self.port = parts.port ?? 5432
        self.database = path
    }

    /// The URL without its password (for messages and logs).
    public var description: String { "postgres://\(user)@\(host):\(port)/\(database)" }

    static func redacted(_ text: String) -> String {
        guard var parts = URLComponents(string: text), parts.password != nil else { return text }
        parts.password = "***"
        return parts.string ?? "(a postgres:// URL)"
    }
}
