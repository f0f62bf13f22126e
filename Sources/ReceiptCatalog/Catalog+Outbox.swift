import GRDB

/// The outbox (table `changes`): local mutations of receipts a sync has not pushed yet. Its one
/// writer is `CatalogWriter`, so an entry is always written in the transaction of its change (I6).
extension CatalogWriter {
    /// The outbox entry of a receipt this transaction changed.
    public func recordChange(_ receiptID: String, zone: String, _ kind: Change.Kind, at: Millis? = nil) throws {
        _ = try statements.run(3, "INSERT INTO changes(receiptID, zone, kind, at) VALUES (?, ?, ?, ?)", db) {
            $0.text(receiptID)
            $0.text(zone)
            $0.text(kind.rawValue)
            $0.int(at ?? now)
        }
    }

    /// Ensures the outbox holds an entry for the receipt (a merged version the server has not seen).
    public func recordChangeUnlessPending(_ receiptID: String, zone: String, _ kind: Change.Kind) throws {
        if try Outbox.hasPending(db, receiptID) { return }
        try recordChange(receiptID, zone: zone, kind)
    }

    /// Queues every receipt of `zone` that has no entry yet (pushed again into a new server zone).
    public func requeue(zone: String) throws {
        try db.execute(sql: """
            INSERT INTO changes(receiptID, zone, kind, at)
            SELECT id, zone, 'upsert', ? FROM receipts
            WHERE zone = ? AND id NOT IN (SELECT receiptID FROM changes)
            """, arguments: [now, zone])
    }

    /// Queues every receipt of this vault's own zones (a new server, or a new account on it).
    public func requeueOwnZones() throws {
        try db.execute(sql: """
            INSERT INTO changes(receiptID, zone, kind, at)
            SELECT r.id, r.zone, 'upsert', ? FROM receipts r JOIN zones z ON z.name = r.zone WHERE z.owner IS NULL
            """, arguments: [now])
    }

    /// Queues every receipt (a rebuilt catalog: its receipts are pushed again where a server is set).
    public func requeueAll() throws {
        try db.execute(sql: "INSERT INTO changes(receiptID, zone, kind, at) SELECT id, zone, 'upsert', ? FROM receipts",
                       arguments: [now])
    }

    /// Removes the receipt's entries up to `seq` (pushed), or all of them (`seq` nil: settled by a merge).
    public func settle(_ receiptID: String, through seq: Int64? = nil) throws {
        if let seq {
            try db.execute(sql: "DELETE FROM changes WHERE receiptID = ? AND seq <= ?", arguments: [receiptID, seq])
        } else {
            try db.execute(sql: "DELETE FROM changes WHERE receiptID = ?", arguments: [receiptID])
        }
    }

    /// Removes the entries of a zone (its receipts are dropped from this vault).
    public func dropOutbox(zone: String) throws {
        try db.execute(sql: "DELETE FROM changes WHERE zone = ?", arguments: [zone])
    }
}

/// Reads of the outbox.
public enum Outbox {
    public static func hasPending(_ db: Database, _ receiptID: String) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM changes WHERE receiptID = ?)", arguments: [receiptID]) ?? false
    }

    /// The latest entry of each receipt, oldest first.
    public static func pending(_ db: Database) throws -> [(receiptID: String, zone: String, seq: Int64)] {
        var latest: [String: (zone: String, seq: Int64)] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT receiptID, zone, seq FROM changes ORDER BY seq") {
            latest[row["receiptID"]] = (row["zone"], row["seq"])
        }
        return latest.map { ($0.key, $0.value.zone, $0.value.seq) }.sorted { $0.seq < $1.seq }
    }
}
