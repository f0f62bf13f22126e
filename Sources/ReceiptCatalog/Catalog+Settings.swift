import GRDB

/// The `settings` table beyond the ones fixed at `receipt init` (`VaultSettings`): the remote.
extension Catalog {
    /// The settings whose key starts with `prefix` (which holds no `%` or `_`), by key.
    public static func settings(_ db: Database, prefixed prefix: String) throws -> [String: String] {
        var out: [String: String] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT key, value FROM settings WHERE key LIKE ?", arguments: [prefix + "%"]) {
            out[row["key"]] = row["value"]
        }
        return out
    }

    public static func setting(_ db: Database, _ key: String) throws -> String? {
        try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = ?", arguments: [key])
    }
}

extension CatalogWriter {
    public func setSetting(_ key: String, _ value: String) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO settings(key, value) VALUES (?, ?)", arguments: [key, value])
    }

    public func removeSettings(_ keys: [String]) throws {
        for key in keys { try db.execute(sql: "DELETE FROM settings WHERE key = ?", arguments: [key]) }
    }
}
