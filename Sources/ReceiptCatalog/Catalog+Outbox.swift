import BlobStore
import GRDB

/// The outbox (table `changes`): local mutations of receipts a sync has not pushed yet. Its one
/// writer is `CatalogWriter`, so an entry is always written in the transaction of its change (I6).
extension CatalogWriter {
    /// The outbox entry of a receipt this transaction changed (by the verbs that change receipts).
    func recordChange(_ receiptID: ReceiptID, zone: String, _ kind: Change.Kind, at: Millis? = nil) throws {
        _ = try statements.run(3, "INSERT INTO changes(receiptID, zone, kind, at) VALUES (?, ?, ?, ?)", db) {
            $0.receiptID(receiptID)
            $0.text(zone)
            $0.text(kind.rawValue)
            $0.int(at ?? now)
        }
    }

    /// An entry of an unreadable catalog's outbox, carried into the rebuilt one.
    public func restoreChange(_ receiptID: ReceiptID, zone: String, _ kind: Change.Kind, at: Millis?) throws {
        try recordChange(receiptID, zone: zone, kind, at: at)
    }

    /// Ensures the outbox holds an entry for the receipt (a merged version the server has not seen).
    public func recordChangeUnlessPending(_ receiptID: ReceiptID, zone: String, _ kind: Change.Kind) throws {
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
    public func settle(_ receiptID: ReceiptID, through seq: Int64? = nil) throws {
        if let seq {
            try db.cachedStatement(sql: "DELETE FROM changes WHERE receiptID = ? AND seq <= ?").execute(arguments: [receiptID, seq])
        } else {
            try db.cachedStatement(sql: "DELETE FROM changes WHERE receiptID = ?").execute(arguments: [receiptID])
        }
    }

    /// Removes the entries of a zone (its receipts are dropped from this vault).
    public func dropOutbox(zone: String) throws {
        try db.execute(sql: "DELETE FROM changes WHERE zone = ?", arguments: [zone])
    }
}

/// Reads of the outbox.
public enum Outbox {
    public static func hasPending(_ db: Database, _ receiptID: ReceiptID) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM changes WHERE receiptID = ?)"),
                          arguments: [receiptID]) ?? false
    }

    /// An outbox entry: the receipt, its zone when it changed, the entry's number.
    public struct Entry: Sendable, Equatable {
        public var receiptID: ReceiptID
        public var zone: String
        public var seq: Int64
    }

    /// The number of the outbox's newest entry (nil: the outbox is empty).
    public static func lastSeq(_ db: Database) throws -> Int64? {
        try Int64.fetchOne(db, sql: "SELECT max(seq) FROM changes")
    }

    /// A page of the outbox: the entries numbered after `seq` and up to `last` that are their
    /// receipt's latest, oldest first, at most `limit`. Read page by page (each `seq` the last of the
    /// page before), these are the receipts to push, each once, with memory for one page only.
    public static func pendingPage(_ db: Database, after seq: Int64, through last: Int64, limit: Int) throws -> [Entry] {
        try entries(db, sql: """
            SELECT c.receiptID, c.zone, c.seq FROM changes c
            WHERE c.seq > ? AND c.seq <= ?
              AND NOT EXISTS (SELECT 1 FROM changes d WHERE d.receiptID = c.receiptID AND d.seq > c.seq)
            ORDER BY c.seq LIMIT ?
            """, [seq, last, limit])
    }

    /// The latest entry of each of these receipts that has one, oldest first.
    public static func pending(_ db: Database, of receiptIDs: [ReceiptID]) throws -> [Entry] {
        guard !receiptIDs.isEmpty else { return [] }
        return try entries(db, sql: """
            SELECT c.receiptID, c.zone, max(c.seq) FROM changes c
            WHERE c.receiptID IN (\(placeholders(receiptIDs.count))) GROUP BY c.receiptID ORDER BY 3
            """, StatementArguments(receiptIDs))
    }

    private static func entries(_ db: Database, sql: String, _ arguments: StatementArguments) throws -> [Entry] {
        try Row.fetchAll(db, sql: sql, arguments: arguments).map {
            Entry(receiptID: try $0.decode(atIndex: 0), zone: try $0.decode(atIndex: 1), seq: try $0.decode(atIndex: 2))
        }
    }
}
