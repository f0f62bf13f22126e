import BlobStore
import ReceiptWire

/// Accounts and tokens (the `receipt server account-*|token-*` commands, and every request's
/// authentication): the flow written once over the storage protocol.
extension ServerStore {
    /// Creates an account with one token (labelled `default`) and returns the token. `quota`:
    /// bytes, nil for none.
    public func addAccount(_ name: String, quota: Int64? = nil) async throws -> String {
        try ServerRules.checkName(name, "account name")
        return try await transaction(.write) { tx in
            guard let id = try await tx.insertAccount(name: name, quota: quota, createdAt: ServerRules.now()) else {
                throw ServerRules.accountExists(name)
            }
            return try await ServerRules.newToken(tx, account: id, label: ServerRules.defaultTokenLabel)
        }
    }

    /// Adds a token for another device; its label must be new for the account.
    public func addToken(account name: String, label: String) async throws -> String {
        try ServerRules.checkName(label, "token label")
        return try await transaction(.write) { tx in
            let id = try await ServerRules.requireAccount(tx, name)
            if try await tx.hasToken(account: id, label: label) { throw ServerRules.tokenLabelTaken(account: name, label: label) }
            return try await ServerRules.newToken(tx, account: id, label: label)
        }
    }

    /// Replaces the token labelled `label` (every token of the account when nil) with one new
    /// token (labelled `label`, or `default`). The replaced tokens stop working at the next request.
    public func rotateToken(account name: String, label: String?) async throws -> String {
        if let label { try ServerRules.checkName(label, "token label") }
        return try await transaction(.write) { tx in
            let id = try await ServerRules.requireAccount(tx, name)
            let deleted = try await tx.deleteTokens(account: id, label: label)
            if let label, deleted == 0 { throw ServerRules.tokenNotFound(account: name, label: label) }
            return try await ServerRules.newToken(tx, account: id, label: label ?? ServerRules.defaultTokenLabel)
        }
    }

    /// Revokes one token; the account's other tokens keep working.
    public func revokeToken(account name: String, label: String) async throws {
        try await transaction(.write) { tx in
            let id = try await ServerRules.requireAccount(tx, name)
            guard try await tx.deleteTokens(account: id, label: label) > 0 else { throw ServerRules.tokenNotFound(account: name, label: label) }
        }
    }

    /// Sets (nil: removes) the account's quota in bytes.
    public func setQuota(account name: String, bytes: Int64?) async throws {
        try await transaction(.write) { tx in
            try await tx.setQuota(account: try await ServerRules.requireAccount(tx, name), bytes: bytes)
        }
    }

    /// Removes an account: its tokens, its shares in others' zones, its zones (with their records).
    /// Refused while it owns a zone shared with another account, unless `deleteZones`.
    public func removeAccount(_ name: String, deleteZones: Bool) async throws -> RemovedAccount {
        try await transaction(.write) { tx in
            let id = try await ServerRules.requireAccount(tx, name)
            try ServerRules.checkRemovable(account: name, sharedZones: try await tx.zoneNames(owner: id, sharedOnly: true),
                                           deleteZones: deleteZones)
            let zones = try await tx.zoneNames(owner: id, sharedOnly: false)
            let removed = try await tx.deleteAccount(id)
            return RemovedAccount(account: name, deletedZones: zones, removedShares: removed.shares, revokedTokens: removed.tokens)
        }
    }

    /// Every account, by name, with its tokens' labels (never the tokens), zones, quota and usage.
    public func accounts() async throws -> [AccountSummary] {
        try await transaction(.read) { tx in
            var summaries: [AccountSummary] = []
            for (id, row) in try await tx.allAccounts() {
                summaries.append(AccountSummary(account: row.name, quota: row.quota, used: try await tx.usage(account: id),
                                                zones: try await tx.zoneNames(owner: id, sharedOnly: false),
                                                tokens: try await tx.tokens(account: id)))
            }
            return summaries
        }
    }

    /// The account holding `token`, or nil. Looked up on every request, so a revoked or rotated
    /// token is refused from the next request on. The stored hash is compared in constant time.
    public func authenticate(token: String) async throws -> Account? {
        guard ServerRules.isTokenShaped(token) else { return nil }
        let presented = ServerRules.tokenHash(token)
        guard let found = try await transaction(.read, { tx in try await tx.tokenHolder(hash: presented) }),
              ServerRules.tokenMatches(stored: found.storedHash, presented: presented) else { return nil }
        return found.account
    }
}

extension ServerStore {
    /// Sets the account's web password (and ends its open web sessions): `receipt server passwd`.
    public func setPassword(account name: String, password: String) async throws {
        try ServerRules.validatePassword(password)
        let stored = try ServerRules.passwordHash(password, salt: SecureRandom.bytes(16), iterations: ServerRules.passwordIterations)
        try await transaction(.write) { tx in
            let id = try await ServerRules.requireAccount(tx, name)
            try await tx.setPassword(account: id, hash: stored, changedAt: ServerRules.now())
            _ = try await tx.deleteSessions(account: id)
        }
    }

    /// Ends every web session of the account; returns how many there were.
    public func revokeSessions(account name: String) async throws -> Int {
        try await transaction(.write) { tx in try await tx.deleteSessions(account: try await ServerRules.requireAccount(tx, name)) }
    }
}

extension ServerRules {
    /// The account's id; not found when there is none of that name.
    static func requireAccount(_ tx: any StorageTransaction, _ name: String) async throws -> Int64 {
        guard let id = try await tx.accountID(named: name) else { throw accountNotFound(name) }
        return id
    }

    /// Stores a new token for the account (its hash only) and returns it: 256 random bits as 64 hex digits.
    static func newToken(_ tx: any StorageTransaction, account: Int64, label: String) async throws -> String {
        let token = SecureRandom.hex(32)
        try await tx.insertToken(account: account, label: label, hash: tokenHash(token), createdAt: now())
        return token
    }
}
