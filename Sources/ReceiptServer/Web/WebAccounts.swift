import BlobStore
import CSHA
import Foundation
import GRDB

/// Web passwords and sessions. A password is kept only as a PBKDF2-HMAC-SHA256 hash (libcrypto,
/// a random salt, 600,000 iterations as OWASP advises), compared in constant time. A session is a
/// random 256-bit id of which only the SHA-256 is stored (like tokens), with its own CSRF token and
/// an expiry; `sessions-revoke` and `passwd` end an account's sessions at its next request.
extension ServerCatalog {
    static let passwordIterations = 600_000
    /// How long a session lasts after sign-in.
    static let sessionLifetimeMilliseconds: Int64 = 12 * 3600 * 1000

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

    /// Sets the account's web password (and ends its open sessions).
    static func validatePassword(_ password: String) throws {
        guard password.utf8.count >= 8 else { throw ServerError.bad("the password must be at least 8 characters long") }
        guard password.utf8.count <= 1024 else { throw ServerError.bad("the password must be at most 1024 bytes long") }
    }

    public func setPassword(account name: String, password: String) throws {
        try Self.validatePassword(password)
        let stored = try Self.passwordHash(password, salt: SecureRandom.bytes(16), iterations: Self.passwordIterations)
        try pool.write { db in
            let id = try Self.accountID(db, name)
            try db.execute(sql: """
                INSERT INTO webPasswords(accountID, hash, changedAt) VALUES (?, ?, ?)
                ON CONFLICT(accountID) DO UPDATE SET hash = excluded.hash, changedAt = excluded.changedAt
                """, arguments: [id, stored, Self.now()])
            try db.execute(sql: "DELETE FROM webSessions WHERE accountID = ?", arguments: [id])
        }
    }

    /// Ends every web session of the account; returns how many there were.
    public func revokeSessions(account name: String) throws -> Int {
        try pool.write { db in
            let id = try Self.accountID(db, name)
            try db.execute(sql: "DELETE FROM webSessions WHERE accountID = ?", arguments: [id])
            return db.changesCount
        }
    }

    /// `pbkdf2-sha256$ITERATIONS$SALT$HASH` (hex).
    static func passwordHash(_ password: String, salt: [UInt8], iterations: Int) throws -> String {
        "pbkdf2-sha256$\(iterations)$\(salt.hexString)$\(try pbkdf2(password, salt: salt, iterations: iterations).hexString)"
    }

    static func pbkdf2(_ password: String, salt: [UInt8], iterations: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        let pass = Array(password.utf8)
        let ok = pass.withUnsafeBufferPointer { p in
            salt.withUnsafeBufferPointer { s in
                out.withUnsafeMutableBufferPointer { o in
                    p.baseAddress!.withMemoryRebound(to: CChar.self, capacity: max(pass.count, 1)) { pc in
                        PKCS5_PBKDF2_HMAC(pc, Int32(pass.count), s.baseAddress, Int32(salt.count), Int32(iterations),
                                          EVP_sha256(), 32, o.baseAddress)
                    }
                }
            }
        }
        guard ok == 1 else { throw ServerError(500, "the password could not be hashed (libcrypto failed)") }
        return out
    }

    /// True when `password` matches the stored hash (constant-time comparison of the derived keys).
    static func passwordMatches(_ password: String, stored: String) -> Bool {
        let parts = stored.split(separator: "$")
        guard parts.count == 4, parts[0] == "pbkdf2-sha256", let iterations = Int(parts[1]), iterations > 0,
              let salt = [UInt8](hex: String(parts[2])), let expected = [UInt8](hex: String(parts[3])),
              let actual = try? pbkdf2(password, salt: salt, iterations: iterations), actual.count == expected.count
        else { return false }
        return actual.withUnsafeBytes { a in expected.withUnsafeBytes { e in CRYPTO_memcmp(a.baseAddress, e.baseAddress, a.count) } } == 0
    }

    /// The account when `password` is its web password, else nil. An unknown account costs the same
    /// hashing work as a known one (its name's existence is not disclosed by timing).
    func checkPassword(account name: String, password: String) async throws -> Account? {
        let row = try await pool.read { db in
            try Row.fetchOne(db, sql: """
                SELECT a.id, a.name, p.hash FROM accounts a JOIN webPasswords p ON p.accountID = a.id WHERE a.name = ?
                """, arguments: [name])
        }
        guard let row else {
            _ = Self.passwordMatches(password, stored: Self.decoyHash)
            return nil
        }
        guard Self.passwordMatches(password, stored: row["hash"]) else { return nil }
        return Account(id: row["id"], name: row["name"], tokenID: 0)
    }

    static let decoyHash: String = (try? passwordHash("decoy", salt: [UInt8](repeating: 0, count: 16),
                                                      iterations: passwordIterations)) ?? ""

    /// Opens a session; returns the id to put in the cookie (only its hash is stored).
    func openSession(for account: Account) async throws -> String {
        let id = SecureRandom.hex(32)
        try await pool.write { db in
            let now = Self.now()
            try db.execute(sql: "DELETE FROM webSessions WHERE expiresAt <= ?", arguments: [now])
            try db.execute(sql: """
                INSERT INTO webSessions(idHash, accountID, csrf, createdAt, expiresAt) VALUES (?, ?, ?, ?, ?)
                """, arguments: [Self.tokenHash(id), account.id, SecureRandom.hex(32), now,
                                 now + Self.sessionLifetimeMilliseconds])
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
                """, arguments: [Self.tokenHash(id), Self.now()]) else { return nil }
            return WebSession(account: Account(id: row["id"], name: row["name"], tokenID: 0), csrf: row["csrf"])
        }
    }

    func closeSession(_ id: String) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM webSessions WHERE idHash = ?", arguments: [Self.tokenHash(id)])
        }
    }
}

struct WebSession: Sendable {
    let account: Account
    let csrf: String

    /// Constant-time check of a submitted CSRF token.
    func accepts(csrf submitted: String?) -> Bool {
        guard let submitted else { return false }
        let a = Array(submitted.utf8), b = Array(csrf.utf8)
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { x in b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress, y.baseAddress, x.count) } } == 0
    }
}

extension Array where Element == UInt8 {
    var hexString: String { map { String(format: "%02x", $0) }.joined() }

    init?(hex: String) {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var i = 0
        while i < digits.count {
            guard let byte = UInt8(String(decoding: digits[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
            i += 2
        }
        self = bytes
    }
}
