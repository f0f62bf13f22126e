import Foundation
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

    public func collected() throws {}
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

    func zones(of account: Int64) async throws -> [StoredZoneListing] {
        try await db.rows("""
            SELECT a.name, z.name, NULL::TEXT, EXISTS (SELECT 1 FROM shares s WHERE s.zone_id = z.id)
            FROM zones z JOIN accounts a ON a.id = z.owner_id WHERE z.owner_id = \(account)
            UNION ALL
            SELECT a.name, z.name, s.role, TRUE
            FROM shares s JOIN zones z ON z.id = s.zone_id JOIN accounts a ON a.id = z.owner_id
            WHERE s.account_id = \(account)
            ORDER BY 1, 2
            """).map { row in
            let (owner, name, role, shared) = try row.decode((String, String, String?, Bool).self)
            return StoredZoneListing(owner: owner, name: name, shareRole: role, shared: shared)
        }
    }

    func insertZone(owner: Int64, name: String, uid: String, createdAt: Int64) async throws -> Bool {
        try await db.run("""
            INSERT INTO zones(uid, owner_id, name, seq, created_at) VALUES (\(uid), \(owner), \(name), 0, \(createdAt))
            ON CONFLICT (owner_id, name) DO NOTHING RETURNING id
            """) > 0
    }

    func deleteZone(_ zone: Int64) async throws {
        // Records, their blob references and shares go with the zone (ON DELETE CASCADE).
        try await db.run("DELETE FROM zones WHERE id = \(zone)")
    }

    func shares(zone: Int64) async throws -> [(account: String, role: String)] {
        try await db.rows("""
            SELECT a.name, s.role FROM shares s JOIN accounts a ON a.id = s.account_id WHERE s.zone_id = \(zone) ORDER BY a.name
            """).map { try $0.decode((String, String).self) }
    }

    func setShare(zone: Int64, account: Int64, role: String) async throws {
        try await db.run("""
            INSERT INTO shares(zone_id, account_id, role) VALUES (\(zone), \(account), \(role))
            ON CONFLICT (zone_id, account_id) DO UPDATE SET role = excluded.role
            """)
    }

    func removeShare(zone: Int64, account: Int64) async throws {
        try await db.run("DELETE FROM shares WHERE zone_id = \(zone) AND account_id = \(account)")
    }

    func dropPossessions(account: Int64, referencedBy zone: Int64) async throws {
        try await db.run("""
            DELETE FROM possessions WHERE account_id = \(account) AND sha256 IN (SELECT sha256 FROM record_blobs WHERE zone_id = \(zone))
            """)
    }

    func bumpTextSequence(account: Int64) async throws {
        try await db.run("""
            INSERT INTO text_seqs(account_id, seq) VALUES (\(account), 1)
            ON CONFLICT (account_id) DO UPDATE SET seq = text_seqs.seq + 1
            """)
    }

    func accountID(named name: String) async throws -> Int64? {
        try await db.value("SELECT id FROM accounts WHERE name = \(name)", as: Int64.self)
    }

    func insertAccount(name: String, quota: Int64?, createdAt: Int64) async throws -> Int64? {
        try await db.value("""
            INSERT INTO accounts(name, quota, created_at) VALUES (\(name), \(quota), \(createdAt)) ON CONFLICT (name) DO NOTHING RETURNING id
            """, as: Int64.self)
    }

    func hasToken(account: Int64, label: String) async throws -> Bool {
        try await db.value("SELECT EXISTS (SELECT 1 FROM tokens WHERE account_id = \(account) AND label = \(label))", as: Bool.self) ?? false
    }

    func insertToken(account: Int64, label: String, hash: String, createdAt: Int64) async throws {
        try await db.run("INSERT INTO tokens(account_id, label, token_hash, created_at) VALUES (\(account), \(label), \(hash), \(createdAt))")
    }

    func deleteTokens(account: Int64, label: String?) async throws -> Int {
        guard let label else { return try await db.run("DELETE FROM tokens WHERE account_id = \(account) RETURNING id") }
        return try await db.run("DELETE FROM tokens WHERE account_id = \(account) AND label = \(label) RETURNING id")
    }

    func setQuota(account: Int64, bytes: Int64?) async throws {
        try await db.run("UPDATE accounts SET quota = \(bytes) WHERE id = \(account)")
    }

    func zoneNames(owner: Int64, sharedOnly: Bool) async throws -> [String] {
        try await db.rows("""
            SELECT name FROM zones z WHERE owner_id = \(owner) AND (NOT \(sharedOnly) OR EXISTS (SELECT 1 FROM shares s WHERE s.zone_id = z.id))
            ORDER BY name
            """).map { try $0.decode(String.self) }
    }

    func deleteAccount(_ account: Int64) async throws -> (shares: Int, tokens: Int) {
        let shares = try await db.run("DELETE FROM shares WHERE account_id = \(account) RETURNING zone_id")
        // Records, their blob references and the zones' shares go with the zones (ON DELETE CASCADE).
        try await db.run("DELETE FROM zones WHERE owner_id = \(account)")
        try await db.run("DELETE FROM possessions WHERE account_id = \(account)")
        let tokens = try await db.run("DELETE FROM tokens WHERE account_id = \(account) RETURNING id")
        try await db.run("DELETE FROM accounts WHERE id = \(account)")
        return (shares, tokens)
    }

    func allAccounts() async throws -> [(id: Int64, quota: StoredQuota)] {
        try await db.rows("SELECT id, name, quota FROM accounts ORDER BY name").map { row in
            let (id, name, quota) = try row.decode((Int64, String, Int64?).self)
            return (id, StoredQuota(name: name, quota: quota))
        }
    }

    func tokens(account: Int64) async throws -> [AccountSummary.Token] {
        try await db.rows("SELECT label, created_at FROM tokens WHERE account_id = \(account) ORDER BY label").map { row in
            let (label, createdAt) = try row.decode((String, Int64).self)
            return AccountSummary.Token(label: label, createdAt: createdAt)
        }
    }

    func setPassword(account: Int64, hash: String, changedAt: Int64) async throws {
        try await db.run("""
            INSERT INTO web_passwords(account_id, hash, changed_at) VALUES (\(account), \(hash), \(changedAt))
            ON CONFLICT (account_id) DO UPDATE SET hash = excluded.hash, changed_at = excluded.changed_at
            """)
    }

    func deleteSessions(account: Int64) async throws -> Int {
        try await db.run("DELETE FROM web_sessions WHERE account_id = \(account) RETURNING 1")
    }

    func tokenHolder(hash: String) async throws -> (account: Account, storedHash: String)? {
        guard let row = try await db.rows("""
            SELECT a.id, a.name, t.id, t.token_hash FROM tokens t JOIN accounts a ON a.id = t.account_id WHERE t.token_hash = \(hash)
            """).first else { return nil }
        let (id, name, tokenID, stored) = try row.decode((Int64, String, Int64, String).self)
        return (Account(id: id, name: name, tokenID: tokenID), stored)
    }

    func record(zone: Int64, id: String) async throws -> StoredRecord? {
        try await db.rows("SELECT change_tag, payload FROM records WHERE zone_id = \(zone) AND id = \(PostgresKey.record(id))").first
            .map { try $0.decode((String, String?).self) }.map { StoredRecord(changeTag: $0.0, payload: $0.1) }
    }

    func saveRecord(zone: Int64, id: String, changeTag: String, seq: Int64, payload: String?, blobs: [String]) async throws {
        let key = PostgresKey.record(id)
        try await db.run("DELETE FROM record_blobs WHERE zone_id = \(zone) AND record_id = \(key)")
        try await db.run("""
            INSERT INTO records(zone_id, id, change_tag, seq, payload) VALUES (\(zone), \(key), \(changeTag), \(seq), \(payload))
            ON CONFLICT (zone_id, id) DO UPDATE SET change_tag = excluded.change_tag, seq = excluded.seq, payload = excluded.payload
            """)
        for blob in blobs {
            try await db.run("INSERT INTO record_blobs(zone_id, record_id, sha256) VALUES (\(zone), \(key), \(PostgresKey.blob(blob))) ON CONFLICT DO NOTHING")
        }
    }

    func advanceZone(_ zone: Int64, seq: Int64, recordBytes: Int64) async throws {
        try await db.run("UPDATE zones SET seq = \(seq), record_bytes = record_bytes + \(recordBytes) WHERE id = \(zone)")
    }

    func changes(zone: Int64, after seq: Int64, limit: Int) async throws -> [StoredChange] {
        try await db.rows("""
            SELECT id, change_tag, seq, payload FROM records WHERE zone_id = \(zone) AND seq > \(seq) ORDER BY seq LIMIT \(limit)
            """).map { row in
            let (id, tag, seq, payload) = try row.decode((UUID, String, Int64, String?).self)
            return StoredChange(id: PostgresKey.recordID(id), changeTag: tag, seq: seq, payload: payload)
        }
    }

    func blobSize(_ sha256: String) async throws -> Int64? {
        try await db.value("SELECT size FROM blobs WHERE sha256 = \(PostgresKey.blob(sha256))", as: Int64.self)
    }

    func holds(account: Int64, blob sha256: String) async throws -> Bool {
        try await db.value("SELECT EXISTS (SELECT 1 FROM possessions WHERE account_id = \(account) AND sha256 = \(PostgresKey.blob(sha256)))",
                           as: Bool.self) ?? false
    }

    func readsZoneReferencing(account: Int64, blob sha256: String) async throws -> Bool {
        try await db.value("""
            SELECT EXISTS (
                SELECT 1 FROM record_blobs rb JOIN zones z ON z.id = rb.zone_id
                WHERE rb.sha256 = \(PostgresKey.blob(sha256)) AND (z.owner_id = \(account) OR EXISTS (
                    SELECT 1 FROM shares s WHERE s.zone_id = z.id AND s.account_id = \(account))))
            """, as: Bool.self) ?? false
    }

    func reserveBlob(_ sha256: String, size: Int64, touchedAt: Int64, possessor: Int64) async throws {
        try await db.run("""
            INSERT INTO blobs(sha256, size, created_at, touched_at) VALUES (\(PostgresKey.blob(sha256)), \(size), \(touchedAt), \(touchedAt))
            ON CONFLICT (sha256) DO UPDATE SET touched_at = excluded.touched_at
            """)
        try await db.run("INSERT INTO possessions(account_id, sha256) VALUES (\(possessor), \(PostgresKey.blob(sha256))) ON CONFLICT DO NOTHING")
    }

    func touchBlob(_ sha256: String, at: Int64) async throws {
        try await db.run("UPDATE blobs SET touched_at = \(at) WHERE sha256 = \(PostgresKey.blob(sha256))")
    }

    func collectableBlobs(touchedBy cutoff: Int64) async throws -> [(sha256: String, size: Int64)] {
        try await db.rows("""
            SELECT sha256, size FROM blobs b
            WHERE touched_at <= \(cutoff) AND NOT EXISTS (SELECT 1 FROM record_blobs rb WHERE rb.sha256 = b.sha256)
            ORDER BY sha256
            """).map { row in
            let (sha256, size) = try row.decode((Data, Int64).self)
            return (PostgresKey.address(sha256), size)
        }
    }

    /// The row lock makes an upload of the blob on any process (`INSERT … ON CONFLICT DO UPDATE
    /// touched_at`) wait until the row and file are gone, then insert the row again.
    func lockCollectable(_ sha256: String, touchedBy cutoff: Int64) async throws -> Bool {
        try await db.value("""
            SELECT 1 FROM blobs b WHERE b.sha256 = \(PostgresKey.blob(sha256)) AND b.touched_at <= \(cutoff)
                AND NOT EXISTS (SELECT 1 FROM record_blobs rb WHERE rb.sha256 = b.sha256)
            FOR UPDATE
            """, as: Int32.self) != nil
    }

    func deleteBlob(_ sha256: String) async throws {
        try await db.run("DELETE FROM possessions WHERE sha256 = \(PostgresKey.blob(sha256))")
        try await db.run("DELETE FROM blobs WHERE sha256 = \(PostgresKey.blob(sha256))")
    }

    func orphanTexts(delete: Bool) async throws -> Int {
        let orphans = """
            FROM blob_texts t WHERE NOT EXISTS (SELECT 1 FROM record_blobs rb JOIN zones z ON z.id = rb.zone_id
                                                WHERE rb.sha256 = t.sha256 AND z.owner_id = t.owner_id)
            """
        guard delete else {
            return try await db.value(PostgresQuery(unsafeSQL: "SELECT count(*)::BIGINT " + orphans), as: Int64.self).map(Int.init) ?? 0
        }
        return try await db.run(PostgresQuery(unsafeSQL: "DELETE " + orphans + " RETURNING 1"))
    }

    func textOwners(blob sha256: String, reader: Int64) async throws -> [Int64] {
        try await db.rows("""
            SELECT DISTINCT z.owner_id FROM record_blobs rb JOIN zones z ON z.id = rb.zone_id
            WHERE rb.sha256 = \(PostgresKey.blob(sha256)) AND (z.owner_id = \(reader)
                  OR EXISTS (SELECT 1 FROM shares s WHERE s.zone_id = z.id AND s.account_id = \(reader)))
            ORDER BY z.owner_id
            """).map { try $0.decode(Int64.self) }
    }

    func insertText(owner: Int64, blob sha256: String, version: String, text: String?, failure: String?, uploadedAt: Int64) async throws -> Bool {
        let bytes = StorageUse.textBytes(text: text, failure: failure)
        return try await db.run("""
            INSERT INTO blob_texts(owner_id, sha256, version, bytes, text, failure, uploaded_at)
            VALUES (\(owner), \(PostgresKey.blob(sha256)), \(version), \(bytes), \(text), \(failure), \(uploadedAt))
            ON CONFLICT (owner_id, sha256, version) DO NOTHING RETURNING 1
            """) > 0
    }

    func hasText(owner: Int64, blob sha256: String, version: String) async throws -> Bool {
        try await db.value("""
            SELECT EXISTS (SELECT 1 FROM blob_texts WHERE owner_id = \(owner) AND sha256 = \(PostgresKey.blob(sha256)) AND version = \(version))
            """, as: Bool.self) ?? false
    }

    func participants(owner: Int64, referencing sha256: String) async throws -> [Int64] {
        try await db.rows("""
            SELECT s.account_id FROM record_blobs rb JOIN zones z ON z.id = rb.zone_id JOIN shares s ON s.zone_id = z.id
            WHERE rb.sha256 = \(PostgresKey.blob(sha256)) AND z.owner_id = \(owner)
            """).map { try $0.decode(Int64.self) }
    }

    func textSequence(account: Int64) async throws -> Int64 {
        try await db.value("SELECT seq FROM text_seqs WHERE account_id = \(account)", as: Int64.self) ?? 0
    }

    func readableText(blob sha256: String, version: String, reader: Int64) async throws -> (text: String?, failure: String?)? {
        guard let row = try await db.rows("""
            SELECT t.text, t.failure FROM blob_texts t
            WHERE t.sha256 = \(PostgresKey.blob(sha256)) AND t.version = \(version) AND EXISTS (
                SELECT 1 FROM record_blobs rb JOIN zones z ON z.id = rb.zone_id
                WHERE rb.sha256 = t.sha256 AND z.owner_id = t.owner_id
                AND (z.owner_id = \(reader) OR EXISTS (SELECT 1 FROM shares s WHERE s.zone_id = z.id AND s.account_id = \(reader))))
            ORDER BY t.owner_id <> \(reader), t.owner_id LIMIT 1
            """).first else { return nil }
        return try row.decode((String?, String?).self)
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
