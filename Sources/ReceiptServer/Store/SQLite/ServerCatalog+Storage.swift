import BlobStore
import GRDB
import ReceiptCatalog

/// The storage protocol (Store/ServerStorage.swift) in SQLite: SQL only, the rules are in Rules/.
extension ServerCatalog {
    public func transaction<T: Sendable>(_ access: StorageAccess, _ body: (any StorageTransaction) async throws -> T) async throws -> T {
        switch access {
        case .read: return try await pool.readTransaction { try await body(SQLiteTransaction(pool: pool, reader: $0)) }
        case .write: return try await pool.transaction { try await body(SQLiteTransaction(pool: pool, reader: nil)) }
        }
    }

    /// The migrated catalog served and was collected from: its pre-upgrade copy has done its work.
    public func collected() throws {
        try CatalogCopy.removeBeforeMigrationCopies(of: FileSystem.join(dataPath, Self.fileName))
    }
}

/// One transaction's statements, run on this thread: in a write transaction on the writer (inside
/// the open `BEGIN IMMEDIATE`), in a read one on the reader it holds (inside its open `BEGIN`).
struct SQLiteTransaction: StorageTransaction {
    let pool: SQLitePool
    /// nil in a write transaction.
    let reader: DatabaseQueue?

    func run<T: Sendable>(_ statement: @escaping @Sendable (Database) throws -> T) async throws -> T {
        if let reader { return try reader.inDatabase(statement) }
        return try pool.inTransaction(statement)
    }

    func zone(owner: String, name: String, account: Int64, lock: Bool) async throws -> StoredZone? {
        try await run { db in
            try Row.fetchOne(db.cachedStatement(sql: """
                SELECT z.id, z.uid, z.ownerID, a.name AS ownerName, z.name, z.seq,
                       (SELECT role FROM shares s WHERE s.zoneID = z.id AND s.accountID = ?) AS shareRole
                FROM zones z JOIN accounts a ON a.id = z.ownerID
                WHERE a.name = ? AND z.name = ?
                """), arguments: [account, owner, name]).map {
                StoredZone(id: $0["id"], uid: $0["uid"], ownerID: $0["ownerID"], owner: $0["ownerName"], name: $0["name"],
                           seq: $0["seq"], shareRole: $0["shareRole"])
            }
        }
    }

    func zones(of account: Int64) async throws -> [StoredZoneListing] {
        try await run { db in
            try Row.fetchAll(db, sql: """
                SELECT a.name AS owner, z.name AS name, NULL AS role,
                       EXISTS (SELECT 1 FROM shares s WHERE s.zoneID = z.id) AS shared
                FROM zones z JOIN accounts a ON a.id = z.ownerID WHERE z.ownerID = ?1
                UNION ALL
                SELECT a.name AS owner, z.name AS name, s.role AS role, 1 AS shared
                FROM shares s JOIN zones z ON z.id = s.zoneID JOIN accounts a ON a.id = z.ownerID
                WHERE s.accountID = ?1
                ORDER BY owner, name
                """, arguments: [account]).map {
                StoredZoneListing(owner: $0["owner"], name: $0["name"], shareRole: $0["role"], shared: $0["shared"])
            }
        }
    }

    func insertZone(owner: Int64, name: String, uid: String, createdAt: Int64) async throws -> Bool {
        try await run { db in
            try db.execute(sql: "INSERT OR IGNORE INTO zones(uid, ownerID, name, seq, createdAt) VALUES (?, ?, ?, 0, ?)",
                           arguments: [uid, owner, name, createdAt])
            return db.changesCount > 0
        }
    }

    func deleteZone(_ zone: Int64) async throws {
        try await run { db in
            try db.execute(sql: "DELETE FROM recordBlobs WHERE zoneID = ?", arguments: [zone])
            try db.execute(sql: "DELETE FROM records WHERE zoneID = ?", arguments: [zone])
            try db.execute(sql: "DELETE FROM shares WHERE zoneID = ?", arguments: [zone])
            try db.execute(sql: "DELETE FROM zones WHERE id = ?", arguments: [zone])
        }
    }

    func shares(zone: Int64) async throws -> [(account: String, role: String)] {
        try await run { db in
            try Row.fetchAll(db, sql: """
                SELECT a.name, s.role FROM shares s JOIN accounts a ON a.id = s.accountID WHERE s.zoneID = ? ORDER BY a.name
                """, arguments: [zone]).map { ($0[0], $0[1]) }
        }
    }

    func setShare(zone: Int64, account: Int64, role: String) async throws {
        try await run { db in
            try db.execute(sql: "INSERT OR REPLACE INTO shares(zoneID, accountID, role) VALUES (?, ?, ?)", arguments: [zone, account, role])
        }
    }

    func removeShare(zone: Int64, account: Int64) async throws {
        try await run { db in try db.execute(sql: "DELETE FROM shares WHERE zoneID = ? AND accountID = ?", arguments: [zone, account]) }
    }

    func dropPossessions(account: Int64, referencedBy zone: Int64) async throws {
        try await run { db in
            try db.execute(sql: "DELETE FROM possessions WHERE accountID = ? AND sha256 IN (SELECT sha256 FROM recordBlobs WHERE zoneID = ?)",
                           arguments: [account, zone])
        }
    }

    func bumpTextSequence(account: Int64) async throws {
        try await run { db in
            try db.execute(sql: "INSERT INTO textSeqs(accountID, seq) VALUES (?, 1) ON CONFLICT(accountID) DO UPDATE SET seq = seq + 1",
                           arguments: [account])
        }
    }

    func accountID(named name: String) async throws -> Int64? {
        try await run { db in try Int64.fetchOne(db, sql: "SELECT id FROM accounts WHERE name = ?", arguments: [name]) }
    }

    func record(zone: Int64, id: String) async throws -> StoredRecord? {
        try await run { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT changeTag, payload FROM records WHERE zoneID = ? AND id = ?"),
                             arguments: [zone, StoredKey.record(id)]).map { StoredRecord(changeTag: $0["changeTag"], payload: $0["payload"]) }
        }
    }

    func saveRecord(zone: Int64, id: String, changeTag: String, seq: Int64, payload: String?, blobs: [String]) async throws {
        try await run { db in
            let id = StoredKey.record(id)
            try db.cachedStatement(sql: "DELETE FROM recordBlobs WHERE zoneID = ? AND recordID = ?").execute(arguments: [zone, id])
            try db.cachedStatement(sql: """
                INSERT INTO records(zoneID, id, changeTag, seq, payload) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(zoneID, id) DO UPDATE SET changeTag = excluded.changeTag, seq = excluded.seq,
                    payload = excluded.payload
                """).execute(arguments: [zone, id, changeTag, seq, payload])
            for blob in blobs {
                try db.cachedStatement(sql: "INSERT OR IGNORE INTO recordBlobs(zoneID, recordID, sha256) VALUES (?, ?, ?)")
                    .execute(arguments: [zone, id, StoredKey.blob(blob)])
            }
        }
    }

    func advanceZone(_ zone: Int64, seq: Int64, recordBytes: Int64) async throws {
        try await run { db in
            try db.cachedStatement(sql: "UPDATE zones SET seq = ?, recordBytes = recordBytes + ? WHERE id = ?")
                .execute(arguments: [seq, recordBytes, zone])
        }
    }

    func changes(zone: Int64, after seq: Int64, limit: Int) async throws -> [StoredChange] {
        try await run { db in
            try Row.fetchAll(db.cachedStatement(sql: """
                SELECT id, changeTag, seq, payload FROM records WHERE zoneID = ? AND seq > ? ORDER BY seq LIMIT ?
                """), arguments: [zone, seq, limit]).map {
                StoredChange(id: StoredKey.recordID($0["id"]), changeTag: $0["changeTag"], seq: $0["seq"], payload: $0["payload"])
            }
        }
    }

    func blobSize(_ sha256: String) async throws -> Int64? {
        try await run { db in
            try Int64.fetchOne(db.cachedStatement(sql: "SELECT size FROM blobs WHERE sha256 = ?"), arguments: [StoredKey.blob(sha256)])
        }
    }

    func holds(account: Int64, blob sha256: String) async throws -> Bool {
        try await run { db in
            try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM possessions WHERE accountID = ? AND sha256 = ?)"),
                              arguments: [account, StoredKey.blob(sha256)]) ?? false
        }
    }

    func readsZoneReferencing(account: Int64, blob sha256: String) async throws -> Bool {
        try await run { db in
            try Bool.fetchOne(db.cachedStatement(sql: """
                SELECT EXISTS (
                    SELECT 1 FROM recordBlobs rb JOIN zones z ON z.id = rb.zoneID
                    WHERE rb.sha256 = ?1 AND (z.ownerID = ?2 OR EXISTS (
                        SELECT 1 FROM shares s WHERE s.zoneID = z.id AND s.accountID = ?2)))
                """), arguments: [StoredKey.blob(sha256), account]) ?? false
        }
    }

    func reserveBlob(_ sha256: String, size: Int64, touchedAt: Int64, possessor: Int64) async throws {
        try await run { db in
            try db.cachedStatement(sql: """
                INSERT INTO blobs(sha256, size, createdAt, touchedAt) VALUES (?1, ?2, ?3, ?3)
                ON CONFLICT(sha256) DO UPDATE SET touchedAt = excluded.touchedAt
                """).execute(arguments: [StoredKey.blob(sha256), size, touchedAt])
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO possessions(accountID, sha256) VALUES (?, ?)")
                .execute(arguments: [possessor, StoredKey.blob(sha256)])
        }
    }

    func touchBlob(_ sha256: String, at: Int64) async throws {
        try await run { db in
            try db.cachedStatement(sql: "UPDATE blobs SET touchedAt = ? WHERE sha256 = ?").execute(arguments: [at, StoredKey.blob(sha256)])
        }
    }

    func quotas(accounts: [Int64]) async throws -> [(id: Int64, quota: StoredQuota)] {
        try await run { db in
            try accounts.compactMap { id in
                try Row.fetchOne(db.cachedStatement(sql: "SELECT name, quota FROM accounts WHERE id = ?"), arguments: [id])
                    .map { (id, StoredQuota(name: $0["name"], quota: $0["quota"])) }
            }
        }
    }

    func usage(account: Int64) async throws -> StorageUse {
        try await run { db in try ServerCatalog.usage(db, accountID: account) }
    }
}
