import GRDB

/// `receipt server backup --check` of an embedded catalog's copy (ServerBackup.swift).
extension ServerCatalog {
    /// The SQLite copy reads whole, and every blob one of its records references is in the backup.
    static func checkBackupCopy(_ path: String, blobs: Set<String>) throws -> [String] {
        var config = Configuration()
        config.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: config)
        defer { try? queue.close() }
        return try queue.read { db in
            let integrity = try String.fetchAll(db, sql: "PRAGMA integrity_check")
            if integrity != ["ok"] { return ["\(path) fails SQLite's integrity check: \(integrity.prefix(3).joined(separator: "; "))"] }
            let referenced = try DatabaseValue.fetchAll(db, sql: "SELECT DISTINCT sha256 FROM recordBlobs ORDER BY sha256").map(StoredKey.address)
            return referenced.filter { !blobs.contains($0) }.map { "blob \($0), which a record references, is missing from the backup" }
        }
    }
}
