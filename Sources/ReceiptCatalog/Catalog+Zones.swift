import GRDB

/// The `zones` table.
extension Catalog {
    public static func zone(_ db: Database, _ name: String) throws -> Zone? {
        try Zone.fetchOne(db, key: name)
    }

    /// Every zone, by name.
    public static func zones(_ db: Database) throws -> [Zone] {
        try Zone.order(Column("name")).fetchAll(db)
    }

    /// The server's change token after the last pull of the zone.
    public static func changeToken(_ db: Database, zone: String) throws -> String? {
        try String.fetchOne(db, sql: "SELECT changeToken FROM zones WHERE name = ?", arguments: [zone])
    }

    /// When the vault's first own zone was made: no blob file older than this can be the vault's own.
    public static func birth(_ db: Database) throws -> Millis? {
        try Millis.fetchOne(db, sql: "SELECT min(createdAt) FROM zones WHERE owner IS NULL")
    }
}

extension CatalogWriter {
    public func insertZone(_ zone: Zone) throws {
        try zone.insert(db)
    }

    public func updateZone(_ zone: Zone) throws {
        try zone.update(db)
    }

    public func setShared(_ shared: Bool, zone: String) throws {
        try db.execute(sql: "UPDATE zones SET shared = ? WHERE name = ?", arguments: [shared, zone])
    }

    public func setChangeToken(_ token: String?, zone: String) throws {
        try db.execute(sql: "UPDATE zones SET changeToken = ? WHERE name = ?", arguments: [token, zone])
    }

    /// Drops the zone's receipts (their attachments by cascade), sync state and outbox entries:
    /// a copy of a zone this vault no longer shares in.
    public func dropReceipts(zone: String) throws {
        try requireTriggers("dropReceipts")
        try db.execute(sql: "DELETE FROM receipts WHERE zone = ?", arguments: [zone])
        try clearSyncState(zone: zone)
        try dropOutbox(zone: zone)
    }

    /// Drops the zone with everything of it.
    public func dropZone(_ name: String) throws {
        try dropReceipts(zone: name)
        try db.execute(sql: "DELETE FROM zones WHERE name = ?", arguments: [name])
    }
}
