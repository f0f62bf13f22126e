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

    func webPassword(account name: String) async throws -> (account: Account, hash: String)? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: """
                SELECT a.id, a.name, p.hash FROM accounts a JOIN webPasswords p ON p.accountID = a.id WHERE a.name = ?
                """, arguments: [name]).map { (Account(id: $0["id"], name: $0["name"], tokenID: 0), $0["hash"]) }
        }
    }

    func insertSession(idHash: String, account: Int64, csrf: String, createdAt: Int64, expiresAt: Int64) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM webSessions WHERE expiresAt <= ?", arguments: [createdAt])
            try db.execute(sql: """
                INSERT INTO webSessions(idHash, accountID, csrf, createdAt, expiresAt) VALUES (?, ?, ?, ?, ?)
                """, arguments: [idHash, account, csrf, createdAt, expiresAt])
        }
    }

    func session(idHash: String, liveAt now: Int64) async throws -> WebSession? {
        try await pool.read { db in
            guard let row = try Row.fetchOne(db, sql: """
                SELECT a.id, a.name, s.csrf FROM webSessions s JOIN accounts a ON a.id = s.accountID
                WHERE s.idHash = ? AND s.expiresAt > ?
                """, arguments: [idHash, now]) else { return nil }
            return WebSession(account: Account(id: row["id"], name: row["name"], tokenID: 0), csrf: row["csrf"])
        }
    }

    func deleteSession(idHash: String) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM webSessions WHERE idHash = ?", arguments: [idHash])
        }
    }
}
