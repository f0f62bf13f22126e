import BlobStore
import Foundation
import GRDB

/// The web view's passwords and sessions in SQLite (the rules: PasswordRules.swift).
extension ServerCatalog {
    static func registerWebMigrations(_ m: inout DatabaseMigrator) {
        m.registerMigration("server-v3-web") { db in
            try db.execute(sql: """
                CREATE TABLE webPasswords (
                    accountID INTEGER PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
                    hash TEXT NOT NULL,
                    changedAt INTEGER NOT NULL
                );
                CREATE TABLE webSessions (
                    idHash TEXT PRIMARY KEY NOT NULL CHECK (length(idHash) = 64),
                    accountID INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    csrf TEXT NOT NULL,
                    createdAt INTEGER NOT NULL,
                    expiresAt INTEGER NOT NULL
                ) WITHOUT ROWID;
                CREATE INDEX webSessions_by_account ON webSessions(accountID);
                """)
        }
    }

    /// The account when `password` is its web password, else nil. An unknown account costs the same
    /// hashing work as a known one (its name's existence is not disclosed by timing).
    func checkPassword(account name: String, password: String) async throws -> Account? {
        let row = try await pool.read { db in
            try Row.fetchOne(db, sql: """
                SELECT a.id, a.name, p.hash FROM accounts a JOIN webPasswords p ON p.accountID = a.id WHERE a.name = ?
                """, arguments: [name]).map { (id: $0["id"] as Int64, name: $0["name"] as String, hash: $0["hash"] as String) }
        }
        guard let row else {
            _ = ServerRules.passwordMatches(password, stored: ServerRules.decoyHash)
            return nil
        }
        guard ServerRules.passwordMatches(password, stored: row.hash) else { return nil }
        return Account(id: row.id, name: row.name, tokenID: 0)
    }

    /// Opens a session; returns the id to put in the cookie (only its hash is stored).
    func openSession(for account: Account) async throws -> String {
        let id = SecureRandom.hex(32)
        try await pool.write { db in
            let now = ServerRules.now()
            try db.execute(sql: "DELETE FROM webSessions WHERE expiresAt <= ?", arguments: [now])
            try db.execute(sql: """
                INSERT INTO webSessions(idHash, accountID, csrf, createdAt, expiresAt) VALUES (?, ?, ?, ?, ?)
                """, arguments: [ServerRules.tokenHash(id), account.id, SecureRandom.hex(32), now,
                                 now + ServerRules.sessionLifetimeMilliseconds])
        }
        return id
    }

    /// The live session with this cookie value: its account and CSRF token.
    func session(_ id: String) async throws -> WebSession? {
        guard id.utf8.count == 64 else { return nil }
        return try await pool.read { db in
            guard let row = try Row.fetchOne(db, sql: """
                SELECT a.id, a.name, s.csrf FROM webSessions s JOIN accounts a ON a.id = s.accountID
                WHERE s.idHash = ? AND s.expiresAt > ?
                """, arguments: [ServerRules.tokenHash(id), ServerRules.now()]) else { return nil }
            return WebSession(account: Account(id: row["id"], name: row["name"], tokenID: 0), csrf: row["csrf"])
        }
    }

    func closeSession(_ id: String) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM webSessions WHERE idHash = ?", arguments: [ServerRules.tokenHash(id)])
        }
    }
}
