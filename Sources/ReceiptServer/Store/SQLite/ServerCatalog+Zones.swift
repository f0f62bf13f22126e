import BlobStore
import GRDB
import ReceiptWire

/// Zones and shares in SQLite, under the one authorization rule (AuthorizationRules.swift).
extension ServerCatalog {

    /// The zone `owner/name` as `caller` may see it; nil when absent or not readable by the caller.
    static func visibleZone(_ db: Database, owner: String, name: String, caller: Account) throws -> VisibleZone? {
        guard let row = try Row.fetchOne(db, sql: """
            SELECT z.id, z.uid, z.ownerID, z.name, a.name AS ownerName,
                   (SELECT role FROM shares s WHERE s.zoneID = z.id AND s.accountID = ?) AS shareRole
            FROM zones z JOIN accounts a ON a.id = z.ownerID
            WHERE a.name = ? AND z.name = ?
            """, arguments: [caller.id, owner, name]) else { return nil }
        let ownerID: Int64 = row["ownerID"]
        guard let role = ServerRules.role(ownerID: ownerID, shareRole: row["shareRole"], caller: caller) else { return nil }
        return VisibleZone(id: row["id"], uid: row["uid"], owner: row["ownerName"], ownerID: ownerID,
                           name: row["name"], role: role)
    }

    static func requireZone(_ db: Database, owner: String, name: String, caller: Account) throws -> VisibleZone {
        try ServerRules.require(visibleZone(db, owner: owner, name: name, caller: caller), owner: owner, name: name)
    }

    static func requireOwner(_ db: Database, owner: String, name: String, caller: Account) throws -> VisibleZone {
        try ServerRules.requireOwner(visibleZone(db, owner: owner, name: name, caller: caller), owner: owner, name: name)
    }

    /// Every zone the caller owns or participates in, sorted by owner then name.
    public func zones(for caller: Account) async throws -> [WireZone] {
        try await pool.read { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT a.name AS owner, z.name AS name, 'owner' AS role,
                       EXISTS (SELECT 1 FROM shares s WHERE s.zoneID = z.id) AS shared
                FROM zones z JOIN accounts a ON a.id = z.ownerID WHERE z.ownerID = ?
                UNION ALL
                SELECT a.name AS owner, z.name AS name, s.role AS role, 1 AS shared
                FROM shares s JOIN zones z ON z.id = s.zoneID JOIN accounts a ON a.id = z.ownerID
                WHERE s.accountID = ?
                ORDER BY owner, name
                """, arguments: [caller.id, caller.id])
            return rows.compactMap { row in
                guard let role = WireRole(rawValue: row["role"]) else { return nil }
                return WireZone(owner: row["owner"], name: row["name"], role: role, shared: row["shared"])
            }
        }
    }

    /// Creates the caller's zone `name`; an existing one is kept as it is. Returns true when created.
    public func createZone(owner: String, name: String, caller: Account) async throws -> Bool {
        try ServerRules.checkCreatesOwnZone(owner: owner, caller: caller)
        return try await pool.write { db in
            if try Int.fetchOne(db, sql: "SELECT 1 FROM zones WHERE ownerID = ? AND name = ?",
                                arguments: [caller.id, name]) != nil {
                return false
            }
            try db.execute(sql: "INSERT INTO zones(uid, ownerID, name, seq, createdAt) VALUES (?, ?, ?, 0, ?)",
                           arguments: [SecureRandom.hex(8), caller.id, name, ServerRules.now()])
            return true
        }
    }

    /// Deletes one of the caller's zones with its records and shares. Blob bytes stay in the store
    /// (content-addressed: another zone may reference them).
    public func deleteZone(owner: String, name: String, caller: Account) async throws {
        try await pool.write { db in
            let zone = try Self.requireOwner(db, owner: owner, name: name, caller: caller)
            try db.execute(sql: "DELETE FROM recordBlobs WHERE zoneID = ?", arguments: [zone.id])
            try db.execute(sql: "DELETE FROM records WHERE zoneID = ?", arguments: [zone.id])
            try db.execute(sql: "DELETE FROM shares WHERE zoneID = ?", arguments: [zone.id])
            try db.execute(sql: "DELETE FROM zones WHERE id = ?", arguments: [zone.id])
        }
    }

    public func shares(owner: String, name: String, caller: Account) async throws -> [WireShare] {
        try await pool.read { db in
            let zone = try Self.requireZone(db, owner: owner, name: name, caller: caller)
            let rows = try Row.fetchAll(db, sql: """
                SELECT a.name, s.role FROM shares s JOIN accounts a ON a.id = s.accountID
                WHERE s.zoneID = ? ORDER BY a.name
                """, arguments: [zone.id])
            return rows.compactMap { row in
                WireRole(rawValue: row["role"]).map { WireShare(account: row["name"], role: $0) }
            }
        }
    }

    /// Shares the caller's zone with `account` as `role` (read or write), replacing an earlier role.
    public func share(owner: String, name: String, with account: String, role: WireRole, caller: Account) async throws {
        try ServerRules.checkShareRole(role)
        try await pool.write { db in
            let zone = try Self.requireOwner(db, owner: owner, name: name, caller: caller)
            let target = try ServerRules.shareTarget(Int64.fetchOne(db, sql: "SELECT id FROM accounts WHERE name = ?", arguments: [account]),
                                                     account: account, zone: zone, caller: caller)
            try db.execute(sql: "INSERT OR REPLACE INTO shares(zoneID, accountID, role) VALUES (?, ?, ?)",
                           arguments: [zone.id, target, role.rawValue])
            // The zone's texts become readable to the participant: its vaults ask again.
            try Self.bumpTextSeq(db, account: target)
        }
    }

    /// Removes `account` from the caller's zone; from then on every request of that account about
    /// the zone or its blobs is answered as if they did not exist. Unsharing a non-participant is not an error.
    public func unshare(owner: String, name: String, with account: String, caller: Account) async throws {
        try await pool.write { db in
            let zone = try Self.requireOwner(db, owner: owner, name: name, caller: caller)
            let target = try ServerRules.shareTarget(Int64.fetchOne(db, sql: "SELECT id FROM accounts WHERE name = ?", arguments: [account]),
                                                     account: account, zone: zone, caller: caller, unsharing: true)
            try db.execute(sql: "DELETE FROM shares WHERE zoneID = ? AND accountID = ?", arguments: [zone.id, target])
            // Its uploads of the zone's blobs would now count against it (ServerCatalog+Quota.swift),
            // for bytes only the zone's owner can remove: it shows it holds them again if it needs to.
            try db.execute(sql: "DELETE FROM possessions WHERE accountID = ? AND sha256 IN (SELECT sha256 FROM recordBlobs WHERE zoneID = ?)",
                           arguments: [target, zone.id])
        }
    }
}
