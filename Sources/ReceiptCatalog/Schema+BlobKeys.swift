import BlobStore
import GRDB

/// Catalog v12: every blob address is its 32 bytes (a BLOB), not its 64 hexadecimal digits, in every
/// table and index that holds one (`blobs`, `attachments`, `blobText`, `importCache`); hex only at
/// the edges (file names, the wire, what a person reads). Each address was 65 bytes of a row and
/// of each index entry naming it (the digits and their length), now 33. See "Blob addresses as
/// bytes" in docs/DESIGN.md.
///
/// SQLite cannot change a column's type in place, so each table is made again (new table, rows
/// copied with their addresses converted, old table dropped, new renamed) in the migrator's one
/// transaction: a catalog is converted whole or not at all. Byte order is the digits' order, so
/// every key keeps its order: the search index's documents (files and texts in the attachments' key
/// order) are the same strings, and the index is kept as it is. `blobs` keeps its rowids (a text
/// sync's cursor, `Catalog.topBlob`).
enum BlobKeys {
    static let tables = ["blobs", "attachments", "blobText", "importCache"]

    /// The column of an address: 32 bytes and nothing else (a text bound by mistake fails here
    /// instead of never matching).
    static let column = "sha256 BLOB NOT NULL CHECK (typeof(sha256) = 'blob' AND length(sha256) = 32)"

    static let unhex = BlobID.bytesFunction

    static func migrate(_ db: Database) throws {
        try refuseWhatIsNoAddress(db)
        try Schema.remakingTables(db, with: unhex) { try makeTables(db) }
    }

    private static func makeTables(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE blobsV12 (
                \(column.replacingOccurrences(of: "NOT NULL", with: "PRIMARY KEY NOT NULL")),
                size INTEGER NOT NULL CHECK (size >= 0),
                storedSize INTEGER NOT NULL CHECK (storedSize >= 0),
                encoding TEXT NOT NULL CHECK (encoding IN ('identity', 'xz')),
                inline BLOB CHECK (inline IS NULL OR (length(inline) = size AND encoding = 'identity')),
                createdAt INTEGER NOT NULL
            );
            INSERT INTO blobsV12(rowid, sha256, size, storedSize, encoding, inline, createdAt)
                SELECT rowid, receipt_unhex(sha256), size, storedSize, encoding, inline, createdAt FROM blobs ORDER BY rowid;
            CREATE TABLE attachmentsV12 (
                receiptRow INTEGER NOT NULL REFERENCES receipts(rowNumber) ON DELETE CASCADE,
                \(column) REFERENCES blobs(sha256),
                receiptID TEXT NOT NULL,
                filename TEXT NOT NULL,
                mediaType TEXT NOT NULL,
                position INTEGER NOT NULL,
                size INTEGER CHECK (size IS NULL OR size >= 0),
                PRIMARY KEY (receiptRow, sha256)
            ) WITHOUT ROWID;
            INSERT INTO attachmentsV12(receiptRow, sha256, receiptID, filename, mediaType, position, size)
                SELECT receiptRow, receipt_unhex(sha256), receiptID, filename, mediaType, position, size
                FROM attachments ORDER BY receiptRow, sha256;
            CREATE TABLE blobTextV12 (
                \(column.replacingOccurrences(of: "NOT NULL", with: "PRIMARY KEY NOT NULL")),
                extractor TEXT NOT NULL,
                state TEXT NOT NULL CHECK (state IN ('text', 'failed')),
                text TEXT NOT NULL DEFAULT '',
                error TEXT,
                extractedAt INTEGER NOT NULL
            ) WITHOUT ROWID;
            INSERT INTO blobTextV12(sha256, extractor, state, text, error, extractedAt)
                SELECT receipt_unhex(sha256), extractor, state, text, error, extractedAt FROM blobText ORDER BY sha256;
            CREATE TABLE importCacheV12 (
                path TEXT PRIMARY KEY NOT NULL,
                device INTEGER NOT NULL,
                inode INTEGER NOT NULL,
                size INTEGER NOT NULL,
                mtimeNs INTEGER NOT NULL,
                \(column)
            );
            INSERT INTO importCacheV12(rowid, path, device, inode, size, mtimeNs, sha256)
                SELECT rowid, path, device, inode, size, mtimeNs, receipt_unhex(sha256) FROM importCache ORDER BY rowid;
            DROP TABLE attachments;
            DROP TABLE blobText;
            DROP TABLE importCache;
            DROP TABLE blobs;
            ALTER TABLE blobsV12 RENAME TO blobs;
            ALTER TABLE attachmentsV12 RENAME TO attachments;
            ALTER TABLE blobTextV12 RENAME TO blobText;
            ALTER TABLE importCacheV12 RENAME TO importCache;
            CREATE INDEX attachments_by_blob ON attachments(sha256);
            CREATE INDEX blobText_by_extractedAt ON blobText(extractor, extractedAt, sha256);
            """)
    }

    /// Refuses, through a read-only connection, a catalog not yet converted that holds a value that is
    /// no address: the file is left byte for byte as it was (a writer's first open adds a page).
    static func refuseUnconvertible(at path: String) throws {
        try Schema.refuseReadOnly(at: path, before: "v12-blob-keys", refuseWhatIsNoAddress)
    }

    /// A value that is no address cannot be converted: the migration stops before its first change,
    /// naming the table and the value (the transaction rolls back, so the file is as it was).
    static func refuseWhatIsNoAddress(_ db: Database) throws {
        for table in tables where try db.tableExists(table) {
            guard let bad = try String.fetchOne(db, sql: """
                SELECT quote(sha256) FROM \(table)
                WHERE typeof(sha256) <> 'text' OR length(sha256) <> 64 OR sha256 GLOB '*[^0-9a-fA-F]*' LIMIT 1
                """) else { continue }
            let shown = bad.count > 80 ? bad.prefix(77) + "..." : bad[...]
            throw DatabaseError(resultCode: .SQLITE_CONSTRAINT_CHECK, message:
                "table \(table) holds the blob address \(shown), which is not 64 hexadecimal digits (migration v12-blob-keys)")
        }
    }
}
