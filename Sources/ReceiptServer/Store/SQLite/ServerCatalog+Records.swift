import BlobStore
import Foundation
import GRDB
import ReceiptWire

/// Records, change tracking and blob authorization.
extension ServerCatalog {
    /// True when a live record of a zone `caller` can read references the blob.
    static func canRead(_ db: Database, blob: String, caller: Account) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: """
            SELECT EXISTS (
                SELECT 1 FROM recordBlobs rb JOIN zones z ON z.id = rb.zoneID
                WHERE rb.sha256 = ? AND (z.ownerID = ? OR EXISTS (
                    SELECT 1 FROM shares s WHERE s.zoneID = z.id AND s.accountID = ?)))
            """), arguments: [blob, caller.id, caller.id]) ?? false
    }

    /// True when the server holds the blob and `caller` has shown it holds the bytes: it uploaded
    /// them, or it can already read a zone that references them. Knowing the address is not enough.
    static func hasProvedPossession(_ db: Database, blob: String, caller: Account) throws -> Bool {
        let uploaded = try Bool.fetchOne(db.cachedStatement(sql: """
            SELECT EXISTS (SELECT 1 FROM possessions WHERE accountID = ? AND sha256 = ?)
            """), arguments: [caller.id, blob]) ?? false
        if uploaded { return true }
        return try canRead(db, blob: blob, caller: caller)
    }

    /// The subset of `blobs` the caller must upload before a record referencing them is accepted.
    public func want(_ blobs: [String], caller: Account) async throws -> [String] {
        let store = self.blobs
        return try await pool.read { db in
            var want: [String] = []
            for blob in blobs {
                let id = try ServerRules.blobAddress(blob)
                let known = try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM blobs WHERE sha256 = ?)"),
                                              arguments: [blob]) ?? false
                let proved = try Self.hasProvedPossession(db, blob: blob, caller: caller)
                if !known || !store.contains(id) || !proved {
                    want.append(blob)
                }
            }
            return want
        }
    }

    /// Records that `caller` uploaded bytes that hashed to each id, in one transaction, BEFORE the
    /// files are installed, and reserves the rows against the server's gc: `touchedAt` is set
    /// `uploadReservation` ahead, so a gc of any grace (even 0) spares them until `uploadsInstalled`
    /// sets it to now (docs/DESIGN.md, "Server gc"). Refused as over quota (and nothing recorded) when the
    /// blobs would take the caller past its quota.
    public func registerUploads(_ blobs: [(id: BlobID, size: Int64)], caller: Account) async throws {
        try await pool.write { db in
            let now = ServerRules.now() + uploadReservationMilliseconds
            try Self.withinQuota(db, accountID: caller.id) {
                for blob in blobs {
                    try db.cachedStatement(sql: """
                        INSERT INTO blobs(sha256, size, createdAt, touchedAt) VALUES (?1, ?2, ?3, ?3)
                        ON CONFLICT(sha256) DO UPDATE SET touchedAt = excluded.touchedAt
                        """).execute(arguments: [blob.id.hex, blob.size, now])
                    try db.cachedStatement(sql: "INSERT OR IGNORE INTO possessions(accountID, sha256) VALUES (?, ?)")
                        .execute(arguments: [caller.id, blob.id.hex])
                }
            }
        }
    }

    /// Ends the reservation `registerUploads` made: the blobs are in place, `touchedAt` is now.
    public func uploadsInstalled(_ ids: [BlobID]) async throws {
        try await pool.write { db in
            for id in ids {
                try db.cachedStatement(sql: "UPDATE blobs SET touchedAt = ? WHERE sha256 = ?")
                    .execute(arguments: [ServerRules.now(), id.hex])
            }
        }
    }

    /// Each blob's size when `caller` may read it; nil otherwise (absent or not readable: the same answer).
    public func readableBlobSizes(_ ids: [BlobID], caller: Account) async throws -> [Int64?] {
        try await pool.read { db in
            try ids.map { id in
                guard try Self.canRead(db, blob: id.hex, caller: caller) else { return nil }
                return try Int64.fetchOne(db.cachedStatement(sql: "SELECT size FROM blobs WHERE sha256 = ?"), arguments: [id.hex])
            }
        }
    }

    // MARK: Push

    /// Applies a push to `owner/name` in one transaction, record by record, by push's rules
    /// (PushRules.swift): each record saved gets a new change tag and the zone's next sequence number.
    public func push(_ request: WirePushRequest, owner: String, name: String, caller: Account) async throws -> WirePushResponse {
        try ServerRules.checkPushSize(request)
        return try await pool.write { db in
            let zone = try Self.requireZone(db, owner: owner, name: name, caller: caller)
            try ServerRules.requireWriter(zone, caller: caller)
            // The records' blobs count against the zone's owner: a push that would take the owner
            // past its quota is refused whole and nothing of it is kept.
            return try Self.withinQuota(db, accountID: zone.ownerID) {
                try Self.apply(request, to: zone, caller: caller, db)
            }
        }
    }

    private static func apply(_ request: WirePushRequest, to zone: VisibleZone, caller: Account, _ db: Database) throws -> WirePushResponse {
        var ledger = ServerRules.PushLedger(seq: try Int64.fetchOne(db.cachedStatement(sql: "SELECT seq FROM zones WHERE id = ?"),
                                                                   arguments: [zone.id]) ?? 0)
        for record in request.records {
            let current = try Row.fetchOne(db.cachedStatement(sql: "SELECT changeTag, payload FROM records WHERE zoneID = ? AND id = ?"),
                                           arguments: [zone.id, record.id])
                .map { ServerRules.StoredRecord(changeTag: $0["changeTag"], payload: $0["payload"]) }
            let blobs = try (record.receipt?.attachments ?? []).map { a in
                ServerRules.StoredBlob(size: try Int64.fetchOne(db.cachedStatement(sql: "SELECT size FROM blobs WHERE sha256 = ?"),
                                                                arguments: [a.sha256]),
                                       proved: try hasProvedPossession(db, blob: a.sha256, caller: caller))
            }
            guard let saved = try ledger.admit(record, current: current, blobs: blobs) else { continue }
            try db.cachedStatement(sql: "DELETE FROM recordBlobs WHERE zoneID = ? AND recordID = ?")
                .execute(arguments: [zone.id, record.id])
            try db.cachedStatement(sql: """
                INSERT INTO records(zoneID, id, changeTag, seq, payload) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(zoneID, id) DO UPDATE SET changeTag = excluded.changeTag, seq = excluded.seq,
                    payload = excluded.payload
                """).execute(arguments: [zone.id, record.id, saved.tag, saved.seq, saved.payload])
            for a in record.receipt?.attachments ?? [] {
                try db.cachedStatement(sql: "INSERT OR IGNORE INTO recordBlobs(zoneID, recordID, sha256) VALUES (?, ?, ?)")
                    .execute(arguments: [zone.id, record.id, a.sha256])
            }
        }
        try db.cachedStatement(sql: "UPDATE zones SET seq = ?, recordBytes = recordBytes + ? WHERE id = ?")
            .execute(arguments: [ledger.seq, ledger.addedBytes, zone.id])
        return WirePushResponse(results: ledger.results)
    }

    // MARK: Pull

    /// The records of `owner/name` changed after `since` (a token from an earlier answer; nil or
    /// empty for everything), at most `limit`, oldest change first.
    public func changes(owner: String, name: String, since: String?, limit: Int, caller: Account) async throws -> WireChangesResponse {
        try await pool.read { db in
            let zone = try Self.requireZone(db, owner: owner, name: name, caller: caller)
            let after = try ServerRules.changesStart(since, zone: zone)
            let rows = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT id, changeTag, seq, payload FROM records WHERE zoneID = ? AND seq > ? ORDER BY seq LIMIT ?
                """), arguments: [zone.id, after, limit + 1])
            let more = rows.count > limit
            var records: [WireRecord] = []
            var last = after
            for row in rows.prefix(limit) {
                records.append(WireRecord(id: row["id"], changeTag: row["changeTag"], receipt: try ServerRules.receipt(row["payload"])))
                last = row["seq"]
            }
            if !more {
                last = max(last, try Int64.fetchOne(db, sql: "SELECT seq FROM zones WHERE id = ?", arguments: [zone.id]) ?? last)
            }
            return WireChangesResponse(records: records, changeToken: ServerRules.changeToken(zone, last), more: more)
        }
    }
}
