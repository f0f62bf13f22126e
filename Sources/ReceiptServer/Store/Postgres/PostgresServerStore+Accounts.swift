import BlobStore
import PostgresNIO
import ReceiptWire

/// Accounts and tokens in PostgreSQL: the same rules and messages as the embedded catalog's.
extension PostgresServerStore {
    static func accountID(_ db: PostgresConnection, _ name: String) async throws -> Int64 {
        guard let id = try await db.value("SELECT id FROM accounts WHERE name = \(name)", as: Int64.self) else {
            throw ServerRules.accountNotFound(name)
        }
        return id
    }

    static func insertToken(_ db: PostgresConnection, accountID: Int64, label: String) async throws -> String {
        let token = SecureRandom.hex(32)
        let hash = ServerRules.tokenHash(token)
        try await db.run("""
            INSERT INTO tokens(account_id, label, token_hash, created_at) VALUES (\(accountID), \(label), \(hash), \(ServerRules.now()))
            """)
        return token
    }

    public func addAccount(_ name: String, quota: Int64?) async throws -> String {
        try ServerRules.checkName(name, "account name")
        return try await transaction { db in
            guard let id = try await db.value("""
                INSERT INTO accounts(name, quota, created_at) VALUES (\(name), \(quota), \(ServerRules.now()))
                ON CONFLICT (name) DO NOTHING RETURNING id
                """, as: Int64.self) else {
                throw ServerRules.accountExists(name)
            }
            return try await Self.insertToken(db, accountID: id, label: ServerRules.defaultTokenLabel)
        }
    }

    public func addToken(account name: String, label: String) async throws -> String {
        try ServerRules.checkName(label, "token label")
        return try await transaction { db in
            let id = try await Self.accountID(db, name)
            if try await db.value("SELECT 1 FROM tokens WHERE account_id = \(id) AND label = \(label)", as: Int32.self) != nil {
                throw ServerRules.tokenLabelTaken(account: name, label: label)
            }
            return try await Self.insertToken(db, accountID: id, label: label)
        }
    }

    public func rotateToken(account name: String, label: String?) async throws -> String {
        if let label { try ServerRules.checkName(label, "token label") }
        return try await transaction { db in
            let id = try await Self.accountID(db, name)
            if let label {
                let deleted = try await db.run("DELETE FROM tokens WHERE account_id = \(id) AND label = \(label) RETURNING id")
                guard deleted > 0 else { throw ServerRules.tokenNotFound(account: name, label: label) }
            } else {
                try await db.run("DELETE FROM tokens WHERE account_id = \(id)")
            }
            return try await Self.insertToken(db, accountID: id, label: label ?? ServerRules.defaultTokenLabel)
        }
    }

    public func revokeToken(account name: String, label: String) async throws {
        try await transaction { db in
            let id = try await Self.accountID(db, name)
            let deleted = try await db.run("DELETE FROM tokens WHERE account_id = \(id) AND label = \(label) RETURNING id")
            guard deleted > 0 else { throw ServerRules.tokenNotFound(account: name, label: label) }
        }
    }

    public func setQuota(account name: String, bytes: Int64?) async throws {
        try await transaction { db in
            let id = try await Self.accountID(db, name)
            try await db.run("UPDATE accounts SET quota = \(bytes) WHERE id = \(id)")
        }
    }

    public func removeAccount(_ name: String, deleteZones: Bool) async throws -> RemovedAccount {
        try await transaction { db in
            let id = try await Self.accountID(db, name)
            let shared = try await db.rows("""
                SELECT DISTINCT z.name FROM zones z JOIN shares s ON s.zone_id = z.id WHERE z.owner_id = \(id) ORDER BY z.name
                """).map { try $0.decode(String.self) }
            try ServerRules.checkRemovable(account: name, sharedZones: shared, deleteZones: deleteZones)
            let zones = try await db.rows("SELECT name FROM zones WHERE owner_id = \(id) ORDER BY name").map { try $0.decode(String.self) }
            let removedShares = try await db.run("DELETE FROM shares WHERE account_id = \(id) RETURNING zone_id")
            // Records, their blob references and the zones' shares go with the zones (ON DELETE CASCADE).
            try await db.run("DELETE FROM zones WHERE owner_id = \(id)")
            try await db.run("DELETE FROM possessions WHERE account_id = \(id)")
            let revoked = try await db.run("DELETE FROM tokens WHERE account_id = \(id) RETURNING id")
            try await db.run("DELETE FROM accounts WHERE id = \(id)")
            return RemovedAccount(account: name, deletedZones: zones, removedShares: removedShares, revokedTokens: revoked)
        }
    }

    public func accounts() async throws -> [AccountSummary] {
        try await transaction { db in
            var summaries: [AccountSummary] = []
            for row in try await db.rows("SELECT id, name, quota FROM accounts ORDER BY name") {
                let (id, name, quota) = try row.decode((Int64, String, Int64?).self)
                let tokens = try await db.rows("SELECT label, created_at FROM tokens WHERE account_id = \(id) ORDER BY label")
                    .map { row in
                        let (label, createdAt) = try row.decode((String, Int64).self)
                        return AccountSummary.Token(label: label, createdAt: createdAt)
                    }
                let zones = try await db.rows("SELECT name FROM zones WHERE owner_id = \(id) ORDER BY name").map { try $0.decode(String.self) }
                summaries.append(AccountSummary(account: name, quota: quota, used: try await Self.usage(db, accountID: id),
                                                              zones: zones, tokens: tokens))
            }
            return summaries
        }
    }

    public func authenticate(token: String) async throws -> Account? {
        guard ServerRules.isTokenShaped(token) else { return nil }
        let presented = ServerRules.tokenHash(token)
        let found: (Account, String)? = try await transaction { db in
            guard let row = try await db.rows("""
                SELECT a.id, a.name, t.id, t.token_hash FROM tokens t JOIN accounts a ON a.id = t.account_id
                WHERE t.token_hash = \(presented)
                """).first else { return nil }
            let (id, name, tokenID, stored) = try row.decode((Int64, String, Int64, String).self)
            return (Account(id: id, name: name, tokenID: tokenID), stored)
        }
        guard let (account, stored) = found,
              ServerRules.tokenMatches(stored: stored, presented: presented) else { return nil }
        return account
    }
}
