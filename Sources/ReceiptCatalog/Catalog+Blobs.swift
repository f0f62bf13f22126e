import BlobStore
import GRDB

/// A blob row to insert: the bytes it describes are durable already (inline here, or a file the
/// ingest path installed before this transaction).
public struct NewBlob: Sendable {
    public let id: BlobID
    public let size: Int64
    public let storedSize: Int64
    public let encoding: BlobEncoding
    public let inline: [UInt8]?

    /// Bytes kept in the catalog.
    public init(inline bytes: [UInt8], id: BlobID) {
        self.id = id
        size = Int64(bytes.count)
        storedSize = Int64(bytes.count)
        encoding = .identity
        inline = bytes
    }

    /// A file of the blob tree.
    public init(external id: BlobID, size: Int64, storedSize: Int64, encoding: BlobEncoding) {
        self.id = id
        self.size = size
        self.storedSize = storedSize
        self.encoding = encoding
        inline = nil
    }
}

extension CatalogWriter {
    /// Inserts the blob's row unless one is there; returns whether it was inserted.
    @discardableResult
    public func insertBlob(_ blob: NewBlob, createdAt: Millis? = nil) throws -> Bool {
        try statements.run(0, """
            INSERT OR IGNORE INTO blobs(sha256, size, storedSize, encoding, inline, createdAt) VALUES (?, ?, ?, ?, ?, ?)
            """, db) {
            $0.text(blob.id.hex)
            $0.int(blob.size)
            $0.int(blob.storedSize)
            $0.text(blob.encoding.rawValue)
            $0.blob(blob.inline)
            $0.int(createdAt ?? now)
        } > 0
    }

    /// Records a blob as the file now under its address is (after fsck verified or refetched it):
    /// external, with this encoding and sizes (`size` nil: unchanged).
    public func rerecordBlob(_ id: BlobID, size: Int64?, storedSize: Int64, encoding: BlobEncoding) throws {
        if let size {
            try db.execute(sql: "UPDATE blobs SET inline = NULL, encoding = ?, size = ?, storedSize = ? WHERE sha256 = ?",
                           arguments: [encoding.rawValue, size, storedSize, id.hex])
        } else {
            try db.execute(sql: "UPDATE blobs SET inline = NULL, encoding = ?, storedSize = ? WHERE sha256 = ?",
                           arguments: [encoding.rawValue, storedSize, id.hex])
        }
    }

    /// Deletes a blob's row if no attachment refers to it (its bytes are gone, or gc removes them).
    /// Returns whether it was deleted.
    @discardableResult
    public func deleteBlobIfUnreferenced(_ id: BlobID) throws -> Bool {
        try db.execute(sql: "DELETE FROM blobs WHERE sha256 = ? AND NOT EXISTS (SELECT 1 FROM attachments WHERE sha256 = ?)",
                       arguments: [id.hex, id.hex])
        return db.changesCount > 0
    }
}
