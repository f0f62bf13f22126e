import BlobStore
import GRDB

extension CatalogWriter {
    /// Inserts the blob's row unless one is there; returns whether it was inserted. Only from a
    /// `DurableBlob`: a row never names bytes a power cut could still take (I1).
    @discardableResult
    public func insertBlob(_ blob: DurableBlob, createdAt: Millis? = nil) throws -> Bool {
        let inserted = try statements.run(0, """
            INSERT OR IGNORE INTO blobs(sha256, size, storedSize, encoding, inline, createdAt) VALUES (?, ?, ?, ?, ?, ?)
            """, db) {
            $0.bytes(blob.id)
            $0.int(blob.size)
            $0.int(blob.storedSize)
            $0.text(blob.encoding.rawValue)
            $0.blob(blob.inline)
            $0.int(createdAt ?? now)
        } > 0
        if inserted { ledger?.addedBlob(blob) }
        return inserted
    }

    /// Records a blob as the file now under its address is (after fsck verified or refetched it):
    /// external, with this encoding and sizes (`size` nil: unchanged).
    public func rerecordBlob(_ id: BlobID, size: Int64?, storedSize: Int64, encoding: BlobEncoding) throws {
        try requireTriggers("rerecordBlob")
        if let size {
            try db.execute(sql: "UPDATE blobs SET inline = NULL, encoding = ?, size = ?, storedSize = ? WHERE sha256 = ?",
                           arguments: [encoding.rawValue, size, storedSize, id])
        } else {
            try db.execute(sql: "UPDATE blobs SET inline = NULL, encoding = ?, storedSize = ? WHERE sha256 = ?",
                           arguments: [encoding.rawValue, storedSize, id])
        }
    }

    /// Deletes a blob's row if no attachment refers to it (its bytes are gone, or gc removes them).
    /// Returns whether it was deleted.
    @discardableResult
    public func deleteBlobIfUnreferenced(_ id: BlobID) throws -> Bool {
        try requireTriggers("deleteBlobIfUnreferenced")
        try db.execute(sql: "DELETE FROM blobs WHERE sha256 = ? AND NOT EXISTS (SELECT 1 FROM attachments WHERE sha256 = ?)",
                       arguments: [id, id])
        return db.changesCount > 0
    }
}

/// What a blob's row says of it, without its inline bytes.
public struct BlobSummary: Sendable, Equatable {
    public var size: Int64
    public var storedSize: Int64
    public var encoding: BlobEncoding
    public var isInline: Bool
    public var createdAt: Millis
}

/// An unreferenced blob row (a gc candidate).
public struct UnreferencedBlob: Sendable, Equatable {
    public var id: BlobID
    public var storedSize: Int64
    public var isInline: Bool
    public var createdAt: Millis
}

/// The catalog's counts, as `receipt stats` shows them.
public struct CatalogCounts: Sendable, Equatable {
    public var receipts = 0
    public var attachments = 0
    public var blobs = 0
    public var externalBlobs = 0
    public var inlineBlobs = 0
    public var logicalBytes: Int64 = 0
    public var storedBytes: Int64 = 0
}

/// Reads of the `blobs` table.
extension Catalog {
    public static func blob(_ db: Database, _ id: BlobID) throws -> BlobRecord? {
        try BlobRecord.fetchOne(db.cachedStatement(sql: "SELECT * FROM blobs WHERE sha256 = ?"), arguments: [id])
    }

    /// A cached statement: gc asks this once for every file of the tree.
    public static func hasBlob(_ db: Database, _ id: BlobID) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM blobs WHERE sha256 = ?"), arguments: [id]) != nil
    }

    public static func blobSummary(_ db: Database, _ id: BlobID) throws -> BlobSummary? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT size, storedSize, encoding, inline IS NOT NULL, createdAt FROM blobs WHERE sha256 = ?
            """), arguments: [id]) else { return nil }
        return BlobSummary(size: row[0], storedSize: row[1], encoding: try row.decode(atIndex: 2), isInline: row[3],
                           createdAt: row[4])
    }

    /// The addresses among `ids` the catalog holds (one query for a batch).
    public static func heldBlobs(_ db: Database, among ids: [BlobID]) throws -> Set<BlobID> {
        guard !ids.isEmpty else { return [] }
        return Set(try BlobID.fetchAll(db, sql: """
            SELECT sha256 FROM blobs WHERE sha256 IN (\(placeholders(ids.count)))
            """, arguments: StatementArguments(ids)))
    }

    /// Calls `body` with each blob row no attachment refers to, by address, one at a time (memory
    /// does not grow with the vault).
    public static func forEachUnreferencedBlob(_ db: Database, _ body: (UnreferencedBlob) throws -> Void) throws {
        let rows = try Row.fetchCursor(db, sql: """
            SELECT sha256, storedSize, inline IS NOT NULL, createdAt FROM blobs b
            WHERE NOT EXISTS (SELECT 1 FROM attachments a WHERE a.sha256 = b.sha256)
            ORDER BY sha256
            """)
        while let row = try rows.next() {
            // A row whose address is not one is fsck's to report, not gc's to remove.
            guard let id = row.blobID(0) else { continue }
            try body(UnreferencedBlob(id: id, storedSize: row[1], isInline: row[2], createdAt: row[3]))
        }
    }

    /// The import stat cache: the content of a file seen before with the same device, inode, size and
    /// mtime, when the catalog still holds its row; with whether the bytes are inline (else the
    /// caller checks the file is there). A cached statement: a manifest asks this once per row.
    public static func cachedImport(_ db: Database, path: String, status: FileStatus) throws -> (id: BlobID, inline: Bool)? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: """
                SELECT c.sha256, b.inline IS NOT NULL FROM importCache c JOIN blobs b ON b.sha256 = c.sha256
                WHERE c.path = ? AND c.device = ? AND c.inode = ? AND c.size = ? AND c.mtimeNs = ?
                """), arguments: [path, Int64(bitPattern: status.device), Int64(bitPattern: status.inode), status.size,
                                  status.mtimeNanoseconds]),
              let id = row.blobID(0) else { return nil }
        return (id, row[1])
    }
}

extension CatalogWriter {
    /// Forgets the import stat cache's entries naming this content (its row is gone).
    public func forgetImports(of id: BlobID) throws {
        try db.execute(sql: "DELETE FROM importCache WHERE sha256 = ?", arguments: [id])
    }
}
