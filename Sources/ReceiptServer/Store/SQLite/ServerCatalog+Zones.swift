import BlobStore
import GRDB
import ReceiptWire

/// The zone lookups of the web's queries (ServerCatalog+WebQueries.swift), under the one authorization rule.
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
}
