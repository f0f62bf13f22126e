import BlobStore
import GRDB
import ReceiptWire

/// Accounts over their whole life: several tokens per account (one per device, each with a label),
/// rotation and revocation that take effect at the next request, removal, and a storage quota.
/// Only a token's SHA-256 is stored, so the data folder never holds a usable credential.
extension ServerCatalog {
    /// Moves tokens out of `accounts` into `tokens` (the existing token keeps working as `default`),
    /// gives accounts a quota, and blobs the time an upload last touched them (for the server's gc).
    static func registerAccountMigrations(_ m: inout DatabaseMigrator) {
        m.registerMigration("server-v2-tokens-quota") { db in
            try db.execute(sql: """
                CREATE TABLE accounts2 (
                    id INTEGER PRIMARY KEY,
                    name TEXT NOT NULL UNIQUE,
                    quota INTEGER CHECK (quota IS NULL OR quota >= 0),
                    createdAt INTEGER NOT NULL
                );
                INSERT INTO accounts2(id, name, quota, createdAt) SELECT id, name, NULL, createdAt FROM accounts;
                CREATE TABLE tokens (
                    id INTEGER PRIMARY KEY,
                    accountID INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    label TEXT NOT NULL,
                    tokenHash TEXT NOT NULL UNIQUE CHECK (length(tokenHash) = 64),
                    createdAt INTEGER NOT NULL,
                    UNIQUE (accountID, label)
                );
                INSERT INTO tokens(accountID, label, tokenHash, createdAt)
                    SELECT id, 'default', tokenHash, createdAt FROM accounts;
                DROP TABLE accounts;
                ALTER TABLE accounts2 RENAME TO accounts;
                ALTER TABLE blobs ADD COLUMN touchedAt INTEGER NOT NULL DEFAULT 0;
                UPDATE blobs SET touchedAt = createdAt;
                CREATE INDEX possessions_by_blob ON possessions(sha256);
                """)
        }
    }

    static func accountID(_ db: Database, _ name: String) throws -> Int64 {
        guard let id = try Int64.fetchOne(db, sql: "SELECT id FROM accounts WHERE name = ?", arguments: [name]) else {
            throw ServerRules.accountNotFound(name)
        }
        return id
    }

    /// Inserts a new token for the account and returns it: 256 random bits as 64 hex digits.
    static func insertToken(_ db: Database, accountID: Int64, label: String) throws -> String {
        let token = SecureRandom.hex(32)
        try db.execute(sql: "INSERT INTO tokens(accountID, label, tokenHash, createdAt) VALUES (?, ?, ?, ?)",
                       arguments: [accountID, label, ServerRules.tokenHash(token), ServerRules.now()])
        return token
    }

    /// Creates an account with one token (labelled `default`) and returns the token. `quota`: bytes,
    /// nil for none.
    public func addAccount(_ name: String, quota: Int64? = nil) async throws -> String {
        try ServerRules.checkName(name, "account name")
        return try await pool.write { db in
            if try Int.fetchOne(db, sql: "SELECT 1 FROM accounts WHERE name = ?", arguments: [name]) != nil {
                throw ServerRules.accountExists(name)
            }
            try db.execute(sql: "INSERT INTO accounts(name, quota, createdAt) VALUES (?, ?, ?)",
                           arguments: [name, quota, ServerRules.now()])
            return try Self.insertToken(db, accountID: db.lastInsertedRowID, label: ServerRules.defaultTokenLabel)
        }
    }

    /// Adds a token for another device; its label must be new for the account.
    public func addToken(account name: String, label: String) async throws -> String {
        try ServerRules.checkName(label, "token label")
        return try await pool.write { db in
            let id = try Self.accountID(db, name)
            if try Int.fetchOne(db, sql: "SELECT 1 FROM tokens WHERE accountID = ? AND label = ?", arguments: [id, label]) != nil {
                throw ServerRules.tokenLabelTaken(account: name, label: label)
            }
            return try Self.insertToken(db, accountID: id, label: label)
        }
    }

    /// Replaces the token labelled `label` (every token of the account when nil) with one new
    /// token (labelled `label`, or `default`). The replaced tokens stop working at the next request.
    public func rotateToken(account name: String, label: String?) async throws -> String {
        if let label { try ServerRules.checkName(label, "token label") }
        return try await pool.write { db in
            let id = try Self.accountID(db, name)
            if let label {
                try db.execute(sql: "DELETE FROM tokens WHERE accountID = ? AND label = ?", arguments: [id, label])
                guard db.changesCount > 0 else { throw ServerRules.tokenNotFound(account: name, label: label) }
            } else {
                try db.execute(sql: "DELETE FROM tokens WHERE accountID = ?", arguments: [id])
            }
            return try Self.insertToken(db, accountID: id, label: label ?? ServerRules.defaultTokenLabel)
        }
    }

    /// Revokes one token; the account's other tokens keep working.
    public func revokeToken(account name: String, label: String) async throws {
        try await pool.write { db in
            let id = try Self.accountID(db, name)
            try db.execute(sql: "DELETE FROM tokens WHERE accountID = ? AND label = ?", arguments: [id, label])
            guard db.changesCount > 0 else { throw ServerRules.tokenNotFound(account: name, label: label) }
        }
    }

    /// Sets (nil: removes) the account's quota in bytes.
    public func setQuota(account name: String, bytes: Int64?) async throws {
        try await pool.write { db in
            let id = try Self.accountID(db, name)
            try db.execute(sql: "UPDATE accounts SET quota = ? WHERE id = ?", arguments: [bytes, id])
        }
    }

    /// Removes an account: its tokens, its shares in others' zones, its zones (with their records).
    /// Refused while it owns a zone shared with another account, unless `deleteZones`.
    public func removeAccount(_ name: String, deleteZones: Bool) async throws -> RemovedAccount {
        try await pool.write { db in
            let id = try Self.accountID(db, name)
            let shared = try String.fetchAll(db, sql: """
                SELECT DISTINCT z.name FROM zones z JOIN shares s ON s.zoneID = z.id WHERE z.ownerID = ? ORDER BY z.name
                """, arguments: [id])
            try ServerRules.checkRemovable(account: name, sharedZones: shared, deleteZones: deleteZones)
            let zones = try String.fetchAll(db, sql: "SELECT name FROM zones WHERE ownerID = ? ORDER BY name", arguments: [id])
            try db.execute(sql: "DELETE FROM shares WHERE accountID = ?", arguments: [id])
            let removedShares = db.changesCount
            try db.execute(sql: """
                DELETE FROM recordBlobs WHERE zoneID IN (SELECT id FROM zones WHERE ownerID = ?);
                DELETE FROM records WHERE zoneID IN (SELECT id FROM zones WHERE ownerID = ?);
                DELETE FROM shares WHERE zoneID IN (SELECT id FROM zones WHERE ownerID = ?);
                DELETE FROM zones WHERE ownerID = ?;
                DELETE FROM possessions WHERE accountID = ?;
                """, arguments: [id, id, id, id, id])
            try db.execute(sql: "DELETE FROM tokens WHERE accountID = ?", arguments: [id])
            let revoked = db.changesCount
            try db.execute(sql: "DELETE FROM accounts WHERE id = ?", arguments: [id])
            return RemovedAccount(account: name, deletedZones: zones, removedShares: removedShares, revokedTokens: revoked)
        }
    }

    /// Every account, by name, with its tokens' labels (never the tokens), zones, quota and usage.
    public func accounts() async throws -> [AccountSummary] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT id, name, quota FROM accounts ORDER BY name").map { row in
                let id: Int64 = row["id"]
                let tokens = try Row.fetchAll(db, sql: "SELECT label, createdAt FROM tokens WHERE accountID = ? ORDER BY label",
                                              arguments: [id]).map { AccountSummary.Token(label: $0["label"], createdAt: $0["createdAt"]) }
                let zones = try String.fetchAll(db, sql: "SELECT name FROM zones WHERE ownerID = ? ORDER BY name", arguments: [id])
                return AccountSummary(account: row["name"], quota: row["quota"], used: try Self.usage(db, accountID: id),
                                      zones: zones, tokens: tokens)
            }
        }
    }

    /// The account holding `token`, or nil. Looked up on every request, so a revoked or rotated
    /// token is refused from the next request on. The stored hash is compared in constant time.
    public func authenticate(token: String) async throws -> Account? {
        guard ServerRules.isTokenShaped(token) else { return nil }
        let presented = ServerRules.tokenHash(token)
        let found: (Account, String)? = try await pool.read { db in
            guard let row = try Row.fetchOne(db, sql: """
                SELECT a.id, a.name, t.id AS tokenID, t.tokenHash FROM tokens t JOIN accounts a ON a.id = t.accountID
                WHERE t.tokenHash = ?
                """, arguments: [presented]) else { return nil }
            return (Account(id: row["id"], name: row["name"], tokenID: row["tokenID"]), row["tokenHash"])
        }
        guard let (account, stored) = found,
              ServerRules.tokenMatches(stored: stored, presented: presented) else { return nil }
        return account
    }

}
