import BlobStore
import PostgresNIO
import ReceiptWire

/// Zones, shares and quotas in PostgreSQL: the embedded catalog's rules (a zone the caller can
/// neither own nor read is "not found", whether or not it exists).
extension PostgresServerStore {
    static func visibleZone(_ db: PostgresConnection, owner: String, name: String, caller: Account,
                            lock: Bool = false) async throws -> VisibleZone? {
        let query: PostgresQuery = lock ? """
            SELECT z.id, z.uid, z.owner_id, z.name, a.name,
                   (SELECT role FROM shares s WHERE s.zone_id = z.id AND s.account_id = \(caller.id))
            FROM zones z JOIN accounts a ON a.id = z.owner_id WHERE a.name = \(owner) AND z.name = \(name)
            FOR UPDATE OF z
            """ : """
            SELECT z.id, z.uid, z.owner_id, z.name, a.name,
                   (SELECT role FROM shares s WHERE s.zone_id = z.id AND s.account_id = \(caller.id))
            FROM zones z JOIN accounts a ON a.id = z.owner_id WHERE a.name = \(owner) AND z.name = \(name)
            """
        guard let row = try await db.rows(query).first else { return nil }
        let (id, uid, ownerID, zoneName, ownerName, share) = try row.decode((Int64, String, Int64, String, String, String?).self)
        guard let role = ServerRules.role(ownerID: ownerID, shareRole: share, caller: caller) else { return nil }
        return VisibleZone(id: id, uid: uid, owner: ownerName, ownerID: ownerID, name: zoneName, role: role)
    }

    /// The zone as the caller may see it; with `lock`, its row stays locked until the transaction
    /// ends, which serializes every push to the zone across processes.
    static func requireZone(_ db: PostgresConnection, owner: String, name: String, caller: Account,
                            lock: Bool = false) async throws -> VisibleZone {
        try ServerRules.require(await visibleZone(db, owner: owner, name: name, caller: caller, lock: lock), owner: owner, name: name)
    }

    static func requireOwner(_ db: PostgresConnection, owner: String, name: String, caller: Account) async throws -> VisibleZone {
        try ServerRules.requireOwner(await visibleZone(db, owner: owner, name: name, caller: caller), owner: owner, name: name)
    }

    public func zones(for caller: Account) async throws -> [WireZone] {
        try await transaction { db in
            try await db.rows("""
                SELECT a.name AS owner, z.name AS name, 'owner' AS role,
                       EXISTS (SELECT 1 FROM shares s WHERE s.zone_id = z.id) AS shared
                FROM zones z JOIN accounts a ON a.id = z.owner_id WHERE z.owner_id = \(caller.id)
                UNION ALL
                SELECT a.name, z.name, s.role, TRUE
                FROM shares s JOIN zones z ON z.id = s.zone_id JOIN accounts a ON a.id = z.owner_id
                WHERE s.account_id = \(caller.id)
                ORDER BY 1, 2
                """).compactMap { row in
                let (owner, name, role, shared) = try row.decode((String, String, String, Bool).self)
                return WireRole(rawValue: role).map { WireZone(owner: owner, name: name, role: $0, shared: shared) }
            }
        }
    }

    public func createZone(owner: String, name: String, caller: Account) async throws -> Bool {
        try ServerRules.checkCreatesOwnZone(owner: owner, caller: caller)
        return try await transaction { db in
            try await db.run("""
                INSERT INTO zones(uid, owner_id, name, seq, created_at) VALUES (\(SecureRandom.hex(8)), \(caller.id), \(name), 0, \(ServerRules.now()))
                ON CONFLICT (owner_id, name) DO NOTHING RETURNING id
                """) > 0
        }
    }

    public func deleteZone(owner: String, name: String, caller: Account) async throws {
        try await transaction { db in
            let zone = try await Self.requireOwner(db, owner: owner, name: name, caller: caller)
            // Records, their blob references and shares go with the zone (ON DELETE CASCADE).
            try await db.run("DELETE FROM zones WHERE id = \(zone.id)")
        }
    }

    public func shares(owner: String, name: String, caller: Account) async throws -> [WireShare] {
        try await transaction { db in
            let zone = try await Self.requireZone(db, owner: owner, name: name, caller: caller)
            return try await db.rows("""
                SELECT a.name, s.role FROM shares s JOIN accounts a ON a.id = s.account_id WHERE s.zone_id = \(zone.id) ORDER BY a.name
                """).compactMap { row in
                let (account, role) = try row.decode((String, String).self)
                return WireRole(rawValue: role).map { WireShare(account: account, role: $0) }
            }
        }
    }

    public func share(owner: String, name: String, with account: String, role: WireRole, caller: Account) async throws {
        try ServerRules.checkShareRole(role)
        try await transaction { db in
            let zone = try await Self.requireOwner(db, owner: owner, name: name, caller: caller)
            let target = try ServerRules.shareTarget(await db.value("SELECT id FROM accounts WHERE name = \(account)", as: Int64.self),
                                                     account: account, zone: zone, caller: caller)
            try await db.run("""
                INSERT INTO shares(zone_id, account_id, role) VALUES (\(zone.id), \(target), \(role.rawValue))
                ON CONFLICT (zone_id, account_id) DO UPDATE SET role = excluded.role
                """)
            // The zone's texts become readable to the participant: its vaults ask again.
            try await Self.bumpTextSeq(db, account: target)
        }
    }

    public func unshare(owner: String, name: String, with account: String, caller: Account) async throws {
        try await transaction { db in
            let zone = try await Self.requireOwner(db, owner: owner, name: name, caller: caller)
            let target = try ServerRules.shareTarget(await db.value("SELECT id FROM accounts WHERE name = \(account)", as: Int64.self),
                                                     account: account, zone: zone, caller: caller, unsharing: true)
            try await db.run("DELETE FROM shares WHERE zone_id = \(zone.id) AND account_id = \(target)")
            // As the embedded catalog: its uploads of the zone's blobs would now count against it.
            try await db.run("""
                DELETE FROM possessions WHERE account_id = \(target) AND sha256 IN (SELECT sha256 FROM record_blobs WHERE zone_id = \(zone.id))
                """)
        }
    }

    // MARK: Quotas (the same rules as the SQLite store's)

    static func usage(_ db: PostgresConnection, accountID: Int64) async throws -> StorageUse {
        guard let row = try await db.rows("""
            SELECT (SELECT COALESCE(SUM(b.size), 0)::BIGINT FROM blobs b WHERE b.sha256 IN (
                        SELECT rb.sha256 FROM record_blobs rb JOIN zones z ON z.id = rb.zone_id WHERE z.owner_id = \(accountID)
                        UNION
                        SELECT p.sha256 FROM possessions p WHERE p.account_id = \(accountID) AND NOT EXISTS (
                            SELECT 1 FROM record_blobs rb JOIN zones z ON z.id = rb.zone_id WHERE rb.sha256 = p.sha256
                            AND (z.owner_id = \(accountID)
                                 OR EXISTS (SELECT 1 FROM shares s WHERE s.zone_id = z.id AND s.account_id = \(accountID)))))),
                   (SELECT COALESCE(SUM(bytes), 0)::BIGINT FROM blob_texts WHERE owner_id = \(accountID)),
                   (SELECT COALESCE(SUM(record_bytes), 0)::BIGINT FROM zones WHERE owner_id = \(accountID))
            """).first else { return StorageUse() }
        let (blobs, texts, records) = try row.decode((Int64, Int64, Int64).self)
        return StorageUse(blobs: blobs, texts: texts, records: records)
    }

    /// Runs `change` in the caller's transaction and throws an over-quota refusal (rolling it back) when it left any
    /// of the accounts over its quota with more bytes than before. The accounts' rows are locked
    /// first, in id order, so two processes cannot each see room for one more upload, and two
    /// changes to the same accounts wait for each other instead of deadlocking.
    static func withinQuota<T>(_ db: PostgresConnection, accountIDs: [Int64], _ change: () async throws -> T) async throws -> T {
        let ids = Set(accountIDs).sorted()
        var limited: [(id: Int64, name: String, quota: Int64, before: Int64)] = []
        for row in try await db.rows("SELECT id, name, quota FROM accounts WHERE id = ANY(\(ids)) ORDER BY id FOR UPDATE") {
            let (id, name, quota) = try row.decode((Int64, String, Int64?).self)
            guard let quota else { continue }
            limited.append((id, name, quota, try await usage(db, accountID: id).total))
        }
        let result = try await change()
        for account in limited {
            try StorageUse.check(account: account.name, quota: account.quota, before: account.before,
                                 after: try await usage(db, accountID: account.id).total)
        }
        return result
    }

    static func withinQuota<T>(_ db: PostgresConnection, accountID: Int64, _ change: () async throws -> T) async throws -> T {
        try await withinQuota(db, accountIDs: [accountID], change)
    }
}
