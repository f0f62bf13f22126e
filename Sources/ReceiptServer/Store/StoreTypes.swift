import ReceiptWire

/// The values the stores return, the same whichever database holds them.

/// An authenticated account.
public struct Account: Sendable, Equatable {
    public let id: Int64
    public let name: String
    /// The token the request presented (rate limits are per token).
    public let tokenID: Int64
}

/// A zone an account can read, with its role on it.
struct VisibleZone: Sendable {
    let id: Int64
    let uid: String
    let owner: String
    let ownerID: Int64
    let name: String
    let role: WireRole
}

public struct RemovedAccount: Sendable, Encodable {
    public let account: String
    public let deletedZones: [String]
    public let removedShares: Int
    public let revokedTokens: Int
}

public struct AccountSummary: Sendable, Encodable {
    public struct Token: Sendable, Encodable {
        public let label: String
        public let createdAt: Int64
    }
    public let account: String
    public let quota: Int64?
    /// Everything counted against the quota: the three parts below together.
    public let usedBytes: Int64
    public let blobBytes: Int64
    public let textBytes: Int64
    public let recordBytes: Int64
    public let zones: [String]
    public let tokens: [Token]

    init(account: String, quota: Int64?, used: StorageUse, zones: [String], tokens: [Token]) {
        (self.account, self.quota, self.zones, self.tokens) = (account, quota, zones, tokens)
        (usedBytes, blobBytes, textBytes, recordBytes) = (used.total, used.blobs, used.texts, used.records)
    }
}
