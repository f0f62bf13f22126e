import BlobStore
import GRDB

/// What a sync last agreed with the server about a receipt (table `syncState`).
public struct SyncStateRow: Sendable, Equatable {
    public var zone: String
    public var changeTag: String
    /// The version both sides held then, as the sync engine's JSON (the base of a three-way merge).
    public var base: String?

    public init(zone: String, changeTag: String, base: String?) {
        self.zone = zone
        self.changeTag = changeTag
        self.base = base
    }
}

extension Catalog {
    public static func syncState(_ db: Database, _ receiptID: ReceiptID) throws -> SyncStateRow? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT zone, changeTag, base FROM syncState WHERE receiptID = ?"),
                                         arguments: [receiptID]) else { return nil }
        return SyncStateRow(zone: row["zone"], changeTag: row["changeTag"], base: row["base"])
    }
}

extension CatalogWriter {
    public func setSyncState(_ receiptID: ReceiptID, _ state: SyncStateRow) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO syncState(receiptID, zone, changeTag, base) VALUES (?, ?, ?, ?)")
            .execute(arguments: [receiptID, state.zone, state.changeTag, state.base])
    }

    public func clearSyncState(zone: String) throws {
        try db.execute(sql: "DELETE FROM syncState WHERE zone = ?", arguments: [zone])
    }

    /// A new server or account: forgets every sync state and change token, and queues every receipt
    /// of the vault's own zones to be pushed.
    public func resetSync() throws {
        try db.execute(sql: "DELETE FROM syncState")
        try db.execute(sql: "UPDATE zones SET changeToken = NULL")
        try requeueOwnZones()
    }
}
