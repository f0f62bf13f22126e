import BlobStore
import Foundation
import GRDB

/// Milliseconds since 1970, the catalog's one time unit.
public typealias Millis = Int64

public func nowMillis() -> Millis {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Millis(ts.tv_sec) * 1000 + Millis(ts.tv_nsec) / 1_000_000
}

/// A receipt's metadata. `total` is an exact decimal string ("12.34"), never a floating-point number.
/// Not a `PersistableRecord`: its table's primary key is the row number (`ReceiptRows`), which a
/// receipt does not carry, so GRDB's `update`/`save`/`delete` would look for the wrong key; the
/// catalog writes receipts by id (`CatalogWriter`).
public struct Receipt: Codable, Sendable, Equatable, FetchableRecord, EncodableRecord {
    public var id: ReceiptID
    public var zone: String
    public var merchant: String?
    public var date: String?
    public var total: String?
    public var currency: String?
    public var category: String?
    public var note: String?
    public var tags: [String]
    public var createdAt: Millis
    public var modifiedAt: Millis
    /// Where a claim for it stands: `none`, `submitted`, `reimbursed` or `denied` (`ClaimStatus`).
    public var status: String
    /// The insurer's or plan's reference of the claim.
    public var claim: String?
    /// The day it was reimbursed (YYYY-MM-DD).
    public var reimbursedOn: String?

    public init(id: ReceiptID, zone: String, merchant: String? = nil, date: String? = nil, total: String? = nil,
                currency: String? = nil, category: String? = nil, note: String? = nil, tags: [String] = [],
                createdAt: Millis, modifiedAt: Millis, status: String = ClaimStatus.none.rawValue,
                claim: String? = nil, reimbursedOn: String? = nil) {
        self.id = id
        self.zone = zone
        self.merchant = merchant
        self.date = date
        self.total = total
        self.currency = currency
        self.category = category
        self.note = note
        self.tags = tags
        self.createdAt = createdAt
        self.modifiedAt = modifiedAt
        self.status = status
        self.claim = claim
        self.reimbursedOn = reimbursedOn
    }

    /// The columns a receipt is read from, in the order `init(row:)` reads them: every query of
    /// receipts selects these (`selection`, on `r`), never `*`, and may add columns of its own after them.
    static let columnNames = ["id", "zone", "merchant", "date", "total", "currency", "category", "note", "tags",
                              "createdAt", "modifiedAt", "status", "claim", "reimbursedOn"]
    static let selection = columnNames.map { "r.\($0)" }.joined(separator: ", ")

    /// Read by position, not through Codable or by name: the Codable decoder was 16 % of a `list` of
    /// a month at a million receipts (keyed containers, dynamic casts and a JSONDecoder per row for
    /// the tags), and looking each name up (hashed, case-folded, per column per row) 6 % more.
    /// A damaged row throws, as it did through Codable: it is fsck's to report.
    public init(row: Row) throws {
        guard row.count >= Self.columnNames.count else {
            throw DatabaseError(resultCode: .SQLITE_MISMATCH, message: "a receipt row has \(row.count) columns, not \(Self.columnNames.count)")
        }
        id = try row.decode(atIndex: 0)
        zone = try row.decode(atIndex: 1)
        merchant = try row.decode(atIndex: 2)
        date = try row.decode(atIndex: 3)
        total = try row.decode(atIndex: 4)
        currency = try row.decode(atIndex: 5)
        category = try row.decode(atIndex: 6)
        note = try row.decode(atIndex: 7)
        tags = try Receipt.tags(json: try row.decode(String.self, atIndex: 8))
        createdAt = try row.decode(atIndex: 9)
        modifiedAt = try row.decode(atIndex: 10)
        status = try row.decode(atIndex: 11)
        claim = try row.decode(atIndex: 12)
        reimbursedOn = try row.decode(atIndex: 13)
    }

    /// The tags column's JSON array; most receipts have none.
    static func tags(json: String) throws -> [String] {
        json == "[]" ? [] : try JSONDecoder().decode([String].self, from: Data(json.utf8))
    }
}

/// Where a receipt's reimbursement claim stands.
public enum ClaimStatus: String, Sendable, CaseIterable, Codable {
    case none, submitted, reimbursed, denied
}

/// A blob attached to a receipt under a file name. A receipt holds a given blob at most once.
public struct Attachment: Codable, Sendable, Equatable, FetchableRecord {
    public var receiptID: ReceiptID
    public var sha256: BlobID
    public var filename: String
    public var mediaType: String
    public var position: Int

    public init(receiptID: ReceiptID, sha256: BlobID, filename: String, mediaType: String, position: Int) {
        self.receiptID = receiptID
        self.sha256 = sha256
        self.filename = filename
        self.mediaType = mediaType
        self.position = position
    }
}

/// A blob the vault holds: external (a file under blobs/, `inline == nil`) or inline (bytes in the catalog).
public struct BlobRecord: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "blobs"
    public var sha256: BlobID
    public var size: Int64
    public var storedSize: Int64
    /// How the external file is encoded. Inline bytes are always the original bytes.
    public var encoding: BlobEncoding
    public var inline: [UInt8]?
    public var createdAt: Millis

    public init(sha256: BlobID, size: Int64, storedSize: Int64, encoding: BlobEncoding, inline: [UInt8]?, createdAt: Millis) {
        self.sha256 = sha256
        self.size = size
        self.storedSize = storedSize
        self.encoding = encoding
        self.inline = inline
        self.createdAt = createdAt
    }

    public var isInline: Bool { inline != nil }

    // `[UInt8]` would be stored through Codable as JSON text; the catalog keeps inline bytes as a BLOB
    // (the schema checks `length(inline) = size`).
    public init(row: Row) throws {
        // Thrown, not trapped: a damaged row is fsck's to report.
        sha256 = try row.decode(BlobID.self, forColumn: "sha256")
        size = row["size"]
        storedSize = row["storedSize"]
        encoding = try row.decode(BlobEncoding.self, forColumn: "encoding")
        if let bytes = row["inline"] as Data? {
            self.inline = [UInt8](bytes)
        } else {
            self.inline = nil
        }
        createdAt = row["createdAt"]
    }

    public func encode(to container: inout PersistenceContainer) throws {
        container["sha256"] = sha256
        container["size"] = size
        container["storedSize"] = storedSize
        container["encoding"] = encoding
        if let inline { container["inline"] = Data(inline) } else { container["inline"] = nil }
        container["createdAt"] = createdAt
    }
}

/// A zone as this vault knows it. Local zones have `owner == nil`; zones shared with this vault's
/// account are named `OWNER/NAME` and carry the owner and the role the account was given.
public struct Zone: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "zones"
    public var name: String
    public var owner: String?
    public var role: ZoneRole
    public var shared: Bool
    /// The server's change token after the last pull of this zone (sync bookkeeping).
    public var changeToken: String?
    public var createdAt: Millis

    public init(name: String, owner: String? = nil, role: ZoneRole = .owner, shared: Bool = false,
                changeToken: String? = nil, createdAt: Millis) {
        self.name = name
        self.owner = owner
        self.role = role
        self.shared = shared
        self.changeToken = changeToken
        self.createdAt = createdAt
    }

    public static let personal = "personal"
    public static let recovered = "recovered"
}

/// One entry of the outbox: a local mutation of a receipt not yet pushed to a server. Written in the
/// same transaction as the mutation, so a sync can never miss one.
public struct Change: Codable, Sendable, Equatable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "changes"
    public var seq: Int64?
    public var receiptID: ReceiptID
    public var zone: String
    public var kind: Kind
    public var at: Millis

    public init(receiptID: ReceiptID, zone: String, kind: Kind, at: Millis) {
        self.receiptID = receiptID
        self.zone = zone
        self.kind = kind
        self.at = at
    }

    public enum Kind: String, Sendable, Codable, DatabaseValueConvertible { case upsert, delete }

    public mutating func didInsert(_ inserted: InsertionSuccess) { seq = inserted.rowID }
}

/// What the import stat cache remembers of a file already imported, so an unchanged file
/// (same device, inode, size and mtime) is not hashed again.
public struct ImportCacheEntry: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "importCache"
    public var path: String
    public var device: Int64
    public var inode: Int64
    public var size: Int64
    public var mtimeNs: Int64
    public var sha256: BlobID

    public init(path: String, device: Int64, inode: Int64, size: Int64, mtimeNs: Int64, sha256: BlobID) {
        self.path = path
        self.device = device
        self.inode = inode
        self.size = size
        self.mtimeNs = mtimeNs
        self.sha256 = sha256
    }
}

#if canImport(Glibc)
import Glibc
#endif
