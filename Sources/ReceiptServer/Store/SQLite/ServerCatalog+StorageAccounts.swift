import GRDB

/// The storage protocol's accounts, tokens, texts and gc in SQLite (ServerCatalog+Storage.swift has
/// the rest): SQL only.
extension SQLiteTransaction {
    func insertAccount(name: String, quota: Int64?, createdAt: Int64) async throws -> Int64? {
        try await run { db in
            try db.execute(sql: "INSERT OR IGNORE INTO accounts(name, quota, createdAt) VALUES (?, ?, ?)", arguments: [name, quota, createdAt])
            return db.changesCount > 0 ? db.lastInsertedRowID : nil
        }
    }

    func hasToken(account: Int64, label: String) async throws -> Bool {
        try await run { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM tokens WHERE accountID = ? AND label = ?)", arguments: [account, label]) ?? false
        }
    }

    func insertToken(account: Int64, label: String, hash: String, createdAt: Int64) async throws {
        try await run { db in
            try db.execute(sql: "INSERT INTO tokens(accountID, label, tokenHash, createdAt) VALUES (?, ?, ?, ?)",
                           arguments: [account, label, hash, createdAt])
        }
    }

    func deleteTokens(account: Int64, label: String?) async throws -> Int {
        try await run { db in
            if let label {
                try db.execute(sql: "DELETE FROM tokens WHERE accountID = ? AND label = ?", arguments: [account, label])
            } else {
                try db.execute(sql: "DELETE FROM tokens WHERE accountID = ?", arguments: [account])
            }
            return db.changesCount
        }
    }

    func setQuota(account: Int64, bytes: Int64?) async throws {
        try await run { db in try db.execute(sql: "UPDATE accounts SET quota = ? WHERE id = ?", arguments: [bytes, account]) }
    }

    func zoneNames(owner: Int64, sharedOnly: Bool) async throws -> [String] {
        try await run { db in
            try String.fetchAll(db, sql: """
                SELECT name FROM zones z WHERE ownerID = ? AND (? = 0 OR EXISTS (SELECT 1 FROM shares s WHERE s.zoneID = z.id))
                ORDER BY name
                """, arguments: [owner, sharedOnly])
        }
    }

    func deleteAccount(_ account: Int64) async throws -> (shares: Int, tokens: Int) {
        try await run { db in
            try db.execute(sql: "DELETE FROM shares WHERE accountID = ?", arguments: [account])
            let shares = db.changesCount
            try db.execute(sql: """
                DELETE FROM recordBlobs WHERE zoneID IN (SELECT id FROM zones WHERE ownerID = ?);
                DELETE FROM records WHERE zoneID IN (SELECT id FROM zones WHERE ownerID = ?);
                DELETE FROM shares WHERE zoneID IN (SELECT id FROM zones WHERE ownerID = ?);
                DELETE FROM zones WHERE ownerID = ?;
                DELETE FROM possessions WHERE accountID = ?;
                """, arguments: [account, account, account, account, account])
            try db.execute(sql: "DELETE FROM tokens WHERE accountID = ?", arguments: [account])
            let tokens = db.changesCount
            try db.execute(sql: "DELETE FROM accounts WHERE id = ?", arguments: [account])
            return (shares, tokens)
        }
    }

    func allAccounts() async throws -> [(id: Int64, quota: StoredQuota)] {
        try await run { db in
            try Row.fetchAll(db, sql: "SELECT id, name, quota FROM accounts ORDER BY name").map {
                ($0["id"], StoredQuota(name: $0["name"], quota: $0["quota"]))
            }
        }
    }

    func tokens(account: Int64) async throws -> [AccountSummary.Token] {
        try await run { db in
            try Row.fetchAll(db, sql: "SELECT label, createdAt FROM tokens WHERE accountID = ? ORDER BY label", arguments: [account])
                .map { AccountSummary.Token(label: $0["label"], createdAt: $0["createdAt"]) }
        }
    }

    func setPassword(account: Int64, hash: String, changedAt: Int64) async throws {
        try await run { db in
            try db.execute(sql: """
                INSERT INTO webPasswords(accountID, hash, changedAt) VALUES (?, ?, ?)
                ON CONFLICT(accountID) DO UPDATE SET hash = excluded.hash, changedAt = excluded.changedAt
                """, arguments: [account, hash, changedAt])
        }
    }

    func deleteSessions(account: Int64) async throws -> Int {
        try await run { db in
            try db.execute(sql: "DELETE FROM webSessions WHERE accountID = ?", arguments: [account])
            return db.changesCount
        }
    }

    func tokenHolder(hash: String) async throws -> (account: Account, storedHash: String)? {
        try await run { db in
            try Row.fetchOne(db.cachedStatement(sql: """
                SELECT a.id, a.name, t.id AS tokenID, t.tokenHash FROM tokens t JOIN accounts a ON a.id = t.accountID
                WHERE t.tokenHash = ?
                """), arguments: [hash]).map { (Account(id: $0["id"], name: $0["name"], tokenID: $0["tokenID"]), $0["tokenHash"]) }
        }
    }

    func collectableBlobs(touchedBy cutoff: Int64) async throws -> [(sha256: String, size: Int64)] {
        try await run { db in
            try Row.fetchAll(db, sql: """
                SELECT sha256, size FROM blobs b
                WHERE touchedAt <= ? AND NOT EXISTS (SELECT 1 FROM recordBlobs rb WHERE rb.sha256 = b.sha256)
                ORDER BY sha256
                """, arguments: [cutoff]).map { (StoredKey.address($0["sha256"]), $0["size"]) }
        }
    }

    func lockCollectable(_ sha256: String, touchedBy cutoff: Int64) async throws -> Bool {
        try await run { db in
            try Bool.fetchOne(db, sql: """
                SELECT EXISTS (SELECT 1 FROM blobs b WHERE b.sha256 = ?1 AND b.touchedAt <= ?2
                    AND NOT EXISTS (SELECT 1 FROM recordBlobs rb WHERE rb.sha256 = b.sha256))
                """, arguments: [StoredKey.blob(sha256), cutoff]) ?? false
        }
    }

    func deleteBlob(_ sha256: String) async throws {
        try await run { db in
            try db.execute(sql: "DELETE FROM possessions WHERE sha256 = ?", arguments: [StoredKey.blob(sha256)])
            try db.execute(sql: "DELETE FROM blobs WHERE sha256 = ?", arguments: [StoredKey.blob(sha256)])
        }
    }

    func orphanTexts(delete: Bool) async throws -> Int {
        try await run { db in
            let orphans = """
                FROM blobTexts WHERE NOT EXISTS (SELECT 1 FROM recordBlobs rb JOIN zones z ON z.id = rb.zoneID
                                                 WHERE rb.sha256 = blobTexts.sha256 AND z.ownerID = blobTexts.ownerID)
                """
            guard delete else { return try Int.fetchOne(db, sql: "SELECT count(*) " + orphans) ?? 0 }
            try db.execute(sql: "DELETE " + orphans)
            return db.changesCount
        }
    }

    func textOwners(blob sha256: String, reader: Int64) async throws -> [Int64] {
        try await run { db in
            try Int64.fetchAll(db.cachedStatement(sql: """
                SELECT DISTINCT z.ownerID FROM recordBlobs rb JOIN zones z ON z.id = rb.zoneID
                WHERE rb.sha256 = ?1 AND (z.ownerID = ?2 OR EXISTS (SELECT 1 FROM shares s WHERE s.zoneID = z.id AND s.accountID = ?2))
                ORDER BY z.ownerID
                """), arguments: [StoredKey.blob(sha256), reader])
        }
    }

    func insertText(owner: Int64, blob sha256: String, version: String, text: String?, failure: String?, uploadedAt: Int64) async throws -> Bool {
        try await run { db in
            try db.cachedStatement(sql: """
                INSERT INTO blobTexts(ownerID, sha256, version, bytes, text, failure, uploadedAt) VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(ownerID, sha256, version) DO NOTHING
                """).execute(arguments: [owner, StoredKey.blob(sha256), version, StorageUse.textBytes(text: text, failure: failure), text, failure, uploadedAt])
            return db.changesCount > 0
        }
    }

    func hasText(owner: Int64, blob sha256: String, version: String) async throws -> Bool {
        try await run { db in
            try Bool.fetchOne(db.cachedStatement(sql: """
                SELECT EXISTS (SELECT 1 FROM blobTexts WHERE ownerID = ? AND sha256 = ? AND version = ?)
                """), arguments: [owner, StoredKey.blob(sha256), version]) ?? false
        }
    }

    func participants(owner: Int64, referencing sha256: String) async throws -> [Int64] {
        try await run { db in
            try Int64.fetchAll(db.cachedStatement(sql: """
                SELECT s.accountID FROM recordBlobs rb JOIN zones z ON z.id = rb.zoneID JOIN shares s ON s.zoneID = z.id
                WHERE rb.sha256 = ? AND z.ownerID = ?
                """), arguments: [StoredKey.blob(sha256), owner])
        }
    }

    func textSequence(account: Int64) async throws -> Int64 {
        try await run { db in try Int64.fetchOne(db, sql: "SELECT seq FROM textSeqs WHERE accountID = ?", arguments: [account]) ?? 0 }
    }

    func readableText(blob sha256: String, version: String, reader: Int64) async throws -> (text: String?, failure: String?)? {
        try await run { db in
            // The texts of the blob first (most blobs asked for have none yet), then, for those, a
            // zone of the text's owner referencing the blob that the reader can read.
            try Row.fetchOne(db.cachedStatement(sql: """
                SELECT t.text, t.failure FROM blobTexts t
                WHERE t.sha256 = ?1 AND t.version = ?2 AND EXISTS (
                    SELECT 1 FROM recordBlobs rb JOIN zones z ON z.id = rb.zoneID
                    WHERE rb.sha256 = t.sha256 AND z.ownerID = t.ownerID
                    AND (z.ownerID = ?3 OR EXISTS (SELECT 1 FROM shares s WHERE s.zoneID = z.id AND s.accountID = ?3)))
                ORDER BY t.ownerID <> ?3, t.ownerID LIMIT 1
                """), arguments: [StoredKey.blob(sha256), version, reader]).map { ($0["text"], $0["failure"]) }
        }
    }
}
