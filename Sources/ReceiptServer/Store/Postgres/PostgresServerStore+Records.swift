import BlobStore
import Foundation
import PostgresNIO
import ReceiptWire

/// Records, change tokens and blob bookkeeping in PostgreSQL (the same rules as the SQLite store's).
extension PostgresServerStore {
    static func canRead(_ db: PostgresConnection, blob: String, caller: Account) async throws -> Bool {
        try await db.value("""
            SELECT EXISTS (
                SELECT 1 FROM record_blobs rb JOIN zones z ON z.id = rb.zone_id
                WHERE rb.sha256 = \(blob) AND (z.owner_id = \(caller.id) OR EXISTS (
                    SELECT 1 FROM shares s WHERE s.zone_id = z.id AND s.account_id = \(caller.id))))
            """, as: Bool.self) ?? false
    }

    static func hasProvedPossession(_ db: PostgresConnection, blob: String, caller: Account) async throws -> Bool {
        let uploaded = try await db.value("""
            SELECT EXISTS (SELECT 1 FROM possessions WHERE account_id = \(caller.id) AND sha256 = \(blob))
            """, as: Bool.self) ?? false
        if uploaded { return true }
        return try await canRead(db, blob: blob, caller: caller)
    }

    public func want(_ blobs: [String], caller: Account) async throws -> [String] {
        let store = self.blobs
        return try await transaction { db in
            var want: [String] = []
            for blob in blobs {
                let id = try ServerRules.blobAddress(blob)
                let known = try await db.value("SELECT EXISTS (SELECT 1 FROM blobs WHERE sha256 = \(blob))", as: Bool.self) ?? false
                let proved = try await Self.hasProvedPossession(db, blob: blob, caller: caller)
                if !known || !store.contains(id) || !proved { want.append(blob) }
            }
            return want
        }
    }

    /// Records the uploads before the files are installed and reserves their rows against gc until
    /// `uploadsInstalled`, as the embedded catalog does.
    public func registerUploads(_ blobs: [(id: BlobID, size: Int64)], caller: Account) async throws {
        let rows = blobs.map { (hex: $0.id.hex, size: $0.size) }
        try await transaction { db in
            let now = ServerRules.now() + uploadReservationMilliseconds
            try await Self.withinQuota(db, accountID: caller.id) {
                for blob in rows {
                    try await db.run("""
                        INSERT INTO blobs(sha256, size, created_at, touched_at) VALUES (\(blob.hex), \(blob.size), \(now), \(now))
                        ON CONFLICT (sha256) DO UPDATE SET touched_at = excluded.touched_at
                        """)
                    try await db.run("""
                        INSERT INTO possessions(account_id, sha256) VALUES (\(caller.id), \(blob.hex)) ON CONFLICT DO NOTHING
                        """)
                }
            }
        }
    }

    public func uploadsInstalled(_ ids: [BlobID]) async throws {
        let now = ServerRules.now()
        try await transaction { db in
            for id in ids { try await db.run("UPDATE blobs SET touched_at = \(now) WHERE sha256 = \(id.hex)") }
        }
    }

    public func readableBlobSizes(_ ids: [BlobID], caller: Account) async throws -> [Int64?] {
        try await transaction { db in
            var sizes: [Int64?] = []
            for id in ids {
                guard try await Self.canRead(db, blob: id.hex, caller: caller) else { sizes.append(nil); continue }
                sizes.append(try await db.value("SELECT size FROM blobs WHERE sha256 = \(id.hex)", as: Int64.self))
            }
            return sizes
        }
    }

    // MARK: Push

    /// One transaction holding the zone's row lock: the zone's sequence is read, advanced per saved
    /// record and written back before the lock is released, so tokens strictly increase per zone
    /// whichever process commits, and each base tag is compared with the committed one.
    public func push(_ request: WirePushRequest, owner: String, name: String, caller: Account) async throws -> WirePushResponse {
        try ServerRules.checkPushSize(request)
        return try await transaction { db in
            let zone = try await Self.requireZone(db, owner: owner, name: name, caller: caller, lock: true)
            try ServerRules.requireWriter(zone, caller: caller)
            return try await Self.withinQuota(db, accountID: zone.ownerID) {
                try await Self.apply(request, to: zone, caller: caller, db)
            }
        }
    }

    private static func apply(_ request: WirePushRequest, to zone: VisibleZone, caller: Account,
                              _ db: PostgresConnection) async throws -> WirePushResponse {
        var ledger = ServerRules.PushLedger(seq: try await db.value("SELECT seq FROM zones WHERE id = \(zone.id)", as: Int64.self) ?? 0)
        for record in request.records {
            let current = try await db.rows("SELECT change_tag, payload FROM records WHERE zone_id = \(zone.id) AND id = \(record.id)").first
                .map { try $0.decode((String, String?).self) }.map { ServerRules.StoredRecord(changeTag: $0.0, payload: $0.1) }
            var blobs: [ServerRules.StoredBlob] = []
            for a in record.receipt?.attachments ?? [] {
                blobs.append(ServerRules.StoredBlob(size: try await db.value("SELECT size FROM blobs WHERE sha256 = \(a.sha256)", as: Int64.self),
                                                    proved: try await hasProvedPossession(db, blob: a.sha256, caller: caller)))
            }
            guard let saved = try ledger.admit(record, current: current, blobs: blobs) else { continue }
            try await db.run("DELETE FROM record_blobs WHERE zone_id = \(zone.id) AND record_id = \(record.id)")
            try await db.run("""
                INSERT INTO records(zone_id, id, change_tag, seq, payload) VALUES (\(zone.id), \(record.id), \(saved.tag), \(saved.seq), \(saved.payload))
                ON CONFLICT (zone_id, id) DO UPDATE SET change_tag = excluded.change_tag, seq = excluded.seq, payload = excluded.payload
                """)
            for a in record.receipt?.attachments ?? [] {
                try await db.run("""
                    INSERT INTO record_blobs(zone_id, record_id, sha256) VALUES (\(zone.id), \(record.id), \(a.sha256)) ON CONFLICT DO NOTHING
                    """)
            }
        }
        try await db.run("UPDATE zones SET seq = \(ledger.seq), record_bytes = record_bytes + \(ledger.addedBytes) WHERE id = \(zone.id)")
        return WirePushResponse(results: ledger.results)
    }

    // MARK: Pull

    public func changes(owner: String, name: String, since: String?, limit: Int, caller: Account) async throws -> WireChangesResponse {
        try await transaction { db in
            // One snapshot for the rows and the zone's sequence (a push committing between them
            // would otherwise be skipped by the token this answer returns).
            try await db.run("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            let zone = try await Self.requireZone(db, owner: owner, name: name, caller: caller)
            let after = try ServerRules.changesStart(since, zone: zone)
            let rows = try await db.rows("""
                SELECT id, change_tag, seq, payload FROM records WHERE zone_id = \(zone.id) AND seq > \(after) ORDER BY seq LIMIT \(limit + 1)
                """)
            let more = rows.count > limit
            var records: [WireRecord] = []
            var last = after
            for row in rows.prefix(limit) {
                let (id, tag, seq, payload) = try row.decode((String, String, Int64, String?).self)
                records.append(WireRecord(id: id, changeTag: tag, receipt: try ServerRules.receipt(payload)))
                last = seq
            }
            if !more {
                last = max(last, try await db.value("SELECT seq FROM zones WHERE id = \(zone.id)", as: Int64.self) ?? last)
            }
            return WireChangesResponse(records: records, changeToken: ServerRules.changeToken(zone, last), more: more)
        }
    }
}
