import PostgresNIO

/// The storage protocol (Store/ServerStorage.swift) in PostgreSQL: SQL only, the rules are in Rules/.
extension PostgresServerStore {
    /// A write transaction serialises against others through the row locks it takes (a zone's with
    /// `zone(…, lock: true)`, accounts' with `quotas`); a read one sees one snapshot.
    public func transaction<T: Sendable>(_ access: StorageAccess, _ body: (any StorageTransaction) async throws -> T) async throws -> T {
        try await transaction { db in
            if access == .read { try await db.run("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY") }
            return try await body(PostgresTransaction(db: db))
        }
    }
}

struct PostgresTransaction: StorageTransaction {
    let db: PostgresConnection

    func zone(owner: String, name: String, account: Int64, lock: Bool) async throws -> StoredZone? {
        let query: PostgresQuery = lock ? """
            SELECT z.id, z.uid, z.owner_id, a.name, z.name, z.seq,
                   (SELECT role FROM shares s WHERE s.zone_id = z.id AND s.account_id = \(account))
            FROM zones z JOIN accounts a ON a.id = z.owner_id WHERE a.name = \(owner) AND z.name = \(name)
            FOR UPDATE OF z
            """ : """
            SELECT z.id, z.uid, z.owner_id, a.name, z.name, z.seq,
                   (SELECT role FROM shares s WHERE s.zone_id = z.id AND s.account_id = \(account))
            FROM zones z JOIN accounts a ON a.id = z.owner_id WHERE a.name = \(owner) AND z.name = \(name)
            """
        guard let row = try await db.rows(query).first else { return nil }
        let (id, uid, ownerID, ownerName, zoneName, seq, share) = try row.decode((Int64, String, Int64, String, String, Int64, String?).self)
        return StoredZone(id: id, uid: uid, ownerID: ownerID, owner: ownerName, name: zoneName, seq: seq, shareRole: share)
    }

    func record(zone: Int64, id: String) async throws -> StoredRecord? {
        try await db.rows("SELECT change_tag, payload FROM records WHERE zone_id = \(zone) AND id = \(id)").first
            .map { try $0.decode((String, String?).self) }.map { StoredRecord(changeTag: $0.0, payload: $0.1) }
    }

    func saveRecord(zone: Int64, id: String, changeTag: String, seq: Int64, payload: String?, blobs: [String]) async throws {
        try await db.run("DELETE FROM record_blobs WHERE zone_id = \(zone) AND record_id = \(id)")
        try await db.run("""
            INSERT INTO records(zone_id, id, change_tag, seq, payload) VALUES (\(zone), \(id), \(changeTag), \(seq), \(payload))
            ON CONFLICT (zone_id, id) DO UPDATE SET change_tag = excluded.change_tag, seq = excluded.seq, payload = excluded.payload
            """)
        for blob in blobs {
            try await db.run("INSERT INTO record_blobs(zone_id, record_id, sha256) VALUES (\(zone), \(id), \(blob)) ON CONFLICT DO NOTHING")
        }
    }

    func advanceZone(_ zone: Int64, seq: Int64, recordBytes: Int64) async throws {
        try await db.run("UPDATE zones SET seq = \(seq), record_bytes = record_bytes + \(recordBytes) WHERE id = \(zone)")
    }

    func changes(zone: Int64, after seq: Int64, limit: Int) async throws -> [StoredChange] {
        try await db.rows("""
            SELECT id, change_tag, seq, payload FROM records WHERE zone_id = \(zone) AND seq > \(seq) ORDER BY seq LIMIT \(limit)
            """).map { row in
            let (id, tag, seq, payload) = try row.decode((String, String, Int64, String?).self)
            return StoredChange(id: id, changeTag: tag, seq: seq, payload: payload)
        }
    }

    func blobSize(_ sha256: String) async throws -> Int64? {
        try await db.value("SELECT size FROM blobs WHERE sha256 = \(sha256)", as: Int64.self)
    }

    func holds(account: Int64, blob sha256: String) async throws -> Bool {
        try await db.value("SELECT EXISTS (SELECT 1 FROM possessions WHERE account_id = \(account) AND sha256 = \(sha256))",
                           as: Bool.self) ?? false
    }

    func readsZoneReferencing(account: Int64, blob sha256: String) async throws -> Bool {
        try await db.value("""
            SELECT EXISTS (
                SELECT 1 FROM record_blobs rb JOIN zones z ON z.id = rb.zone_id
                WHERE rb.sha256 = \(sha256) AND (z.owner_id = \(account) OR EXISTS (
                    SELECT 1 FROM shares s WHERE s.zone_id = z.id AND s.account_id = \(account))))
            """, as: Bool.self) ?? false
    }

    func reserveBlob(_ sha256: String, size: Int64, touchedAt: Int64, possessor: Int64) async throws {
        try await db.run("""
            INSERT INTO blobs(sha256, size, created_at, touched_at) VALUES (\(sha256), \(size), \(touchedAt), \(touchedAt))
            ON CONFLICT (sha256) DO UPDATE SET touched_at = excluded.touched_at
            """)
        try await db.run("INSERT INTO possessions(account_id, sha256) VALUES (\(possessor), \(sha256)) ON CONFLICT DO NOTHING")
    }

    func touchBlob(_ sha256: String, at: Int64) async throws {
        try await db.run("UPDATE blobs SET touched_at = \(at) WHERE sha256 = \(sha256)")
    }

    func quotas(accounts: [Int64]) async throws -> [(id: Int64, quota: StoredQuota)] {
        try await db.rows("SELECT id, name, quota FROM accounts WHERE id = ANY(\(accounts)) ORDER BY id FOR UPDATE").map { row in
            let (id, name, quota) = try row.decode((Int64, String, Int64?).self)
            return (id, StoredQuota(name: name, quota: quota))
        }
    }

    func usage(account: Int64) async throws -> StorageUse {
        try await PostgresServerStore.usage(db, accountID: account)
    }
}
