import BlobStore
import GRDB

/// A blob whose text is still to be extracted, with the media type of (one of) its attachments.
public struct PendingText: Sendable, Equatable {
    public var sha256: BlobID
    public var mediaType: String
    public var size: Int64
}

/// How far text extraction has come.
public struct TextCounts: Sendable, Equatable {
    /// Referenced blobs whose text (or failure) is recorded for the current extractor version.
    public var indexed: Int
    /// Of those, the ones the extractor failed on.
    public var failed: Int
    /// Referenced blobs still to extract.
    public var pending: Int
}

/// The text cache: what the extractors read of each blob, keyed by its SHA-256 and the extractor's
/// version. Storing or replacing a text updates the search index in the same transaction (triggers).
extension Catalog {
    /// Up to `limit` referenced blobs with no text for `version`, in address order after `after` (nil:
    /// from the first). `among`: only these; `addedUpTo`: only blob rows inserted up to that row (`topBlob`).
    public static func pendingText(_ db: Database, version: String, after: BlobID? = nil, among: [BlobID]? = nil,
                                   addedUpTo upTo: Int64? = nil, limit: Int) throws -> [PendingText] {
        var arguments: StatementArguments = [after?.databaseValue ?? BlobID.beforeAll]
        var amongSQL = ""
        if let among {
            amongSQL = "AND b.sha256 IN (\(placeholders(max(among.count, 1))))"
            arguments += among.isEmpty ? [BlobID.beforeAll] : StatementArguments(among)
        }
        if let upTo {
            amongSQL += " AND b.rowid <= ?"
            arguments += [upTo]
        }
        arguments += [version, limit]
        let rows = try Row.fetchAll(db, sql: """
            SELECT b.sha256, (SELECT a.mediaType FROM attachments a WHERE a.sha256 = b.sha256 LIMIT 1) AS mediaType, b.size
            FROM blobs b
            WHERE b.sha256 > ? \(amongSQL)
              AND EXISTS (SELECT 1 FROM attachments a WHERE a.sha256 = b.sha256)
              AND NOT EXISTS (SELECT 1 FROM blobText t WHERE t.sha256 = b.sha256 AND t.extractor = ?)
            ORDER BY b.sha256 LIMIT ?
            """, arguments: arguments)
        // A blob row's address is checked when it is written (`insertBlob` takes a `DurableBlob`).
        return rows.compactMap { row in
            row.blobID("sha256").map {
                PendingText(sha256: $0, mediaType: row["mediaType"] ?? "application/octet-stream", size: row["size"])
            }
        }
    }

    /// Up to `limit` referenced blobs with no text for `version` whose rows were inserted after `row`
    /// (`topBlob`), in rowid order: the rowid range is all that is read, however large the vault.
    public static func pendingTextAdded(_ db: Database, version: String, afterRow row: Int64,
                                        limit: Int) throws -> [(row: Int64, sha256: BlobID)] {
        try Row.fetchAll(db, sql: """
            SELECT b.rowid, b.sha256 FROM blobs b
            WHERE b.rowid > ?
              AND EXISTS (SELECT 1 FROM attachments a WHERE a.sha256 = b.sha256)
              AND NOT EXISTS (SELECT 1 FROM blobText t WHERE t.sha256 = b.sha256 AND t.extractor = ?)
            ORDER BY b.rowid LIMIT ?
            """, arguments: [row, version, limit]).compactMap { row in row.blobID(1).map { (row[0], $0) } }
    }

    /// The blob row inserted last (its rowid and address), nil in a vault without blobs. Rows inserted
    /// later have a greater rowid as long as this one is still there with that address: SQLite gives
    /// a new row the greatest rowid plus one, so a rowid is reused only after the greatest was deleted.
    public static func topBlob(_ db: Database) throws -> (row: Int64, sha256: BlobID)? {
        try Row.fetchOne(db, sql: "SELECT rowid, sha256 FROM blobs ORDER BY rowid DESC LIMIT 1")
            .flatMap { row in row.blobID(1).map { (row[0], $0) } }
    }

    /// The address of the blob row `row`, if there is one.
    public static func blobAddress(_ db: Database, row: Int64) throws -> BlobID? {
        try BlobID.fetchOne(db, sql: "SELECT sha256 FROM blobs WHERE rowid = ?", arguments: [row])
    }

}

extension CatalogWriter {
    /// Records the text of a blob (or why the extractor failed on it), replacing an older one; at
    /// this transaction's time unless `time` is given.
    public func storeText(of blob: BlobID, version: String, text: String?, error: String?, at time: Millis? = nil) throws {
        // A ledgered transaction's new receipts have no documents yet for the text's triggers to replace.
        try requireTriggers("storeText")
        // Prepared once: it fires the search index's triggers, which preparing compiles in (`index` and
        // a sync store thousands of texts; docs/DESIGN.md, "Statements prepared once").
        // A text that is the blob's inline bytes is stored once, in the blob's row (`TextOnce`).
        try db.cachedStatement(sql: TextOnce.storeSQL).execute(arguments: [blob, version, text == nil ? "failed" : "text", text ?? "", error, time ?? now])
    }

    /// Makes every blob pending again (`index --rebuild`); the old texts stay searchable until replaced.
    public func markTextStale() throws {
        try db.execute(sql: "UPDATE blobText SET extractor = '' ")
    }
}

extension Catalog {
    /// The extracted text of each of `blobs` that has some.
    public static func texts(_ db: Database, _ blobs: [BlobID]) throws -> [BlobID: String] {
        guard !blobs.isEmpty else { return [:] }
        let rows = try Row.fetchAll(db, sql: """
            SELECT sha256, text FROM \(TextOnce.view) WHERE state = 'text' AND sha256 IN (\(placeholders(blobs.count)))
            """, arguments: StatementArguments(blobs))
        return Dictionary(rows.compactMap { row in row.blobID("sha256").map { ($0, row["text"] as String) } },
                          uniquingKeysWith: { a, _ in a })
    }
}

/// A stored text or the extractor's failure, as a sync offers it.
public struct StoredText: Sendable, Equatable {
    /// nil: the extractor failed (`error` says why).
    public var text: String?
    public var error: String?
}

extension Catalog {
    /// Up to `limit` texts of `version` stored after (`extractedAt`, address) = (`mark`, `after`), in
    /// that order (`after` nil: from the first address): the ones a sync has not offered yet.
    /// Every sync runs it: it reads the index `blobText_by_extractedAt`, never the texts themselves.
    public static func textsStored(_ db: Database, version: String, after mark: Millis, _ after: BlobID?,
                                   limit: Int) throws -> [(sha256: BlobID, extractedAt: Millis)] {
        try Row.fetchAll(db, sql: textsStoredSQL, arguments: [version, mark, mark, after?.databaseValue ?? BlobID.beforeAll, limit])
            .compactMap { row in row.blobID("sha256").map { ($0, row["extractedAt"] as Millis) } }
    }

    static let textsStoredSQL = """
        SELECT sha256, extractedAt FROM blobText
        WHERE extractor = ? AND (extractedAt > ? OR (extractedAt = ? AND sha256 > ?))
        ORDER BY extractedAt, sha256 LIMIT ?
        """

    /// Of `among`, the blobs with a text of `version` stored at or before `mark` (ms), in address order.
    public static func textsStored(_ db: Database, version: String, among: [BlobID], upTo mark: Millis) throws -> [BlobID] {
        guard !among.isEmpty else { return [] }
        return try BlobID.fetchAll(db, sql: """
            SELECT sha256 FROM blobText WHERE extractor = ? AND extractedAt <= ?
              AND sha256 IN (\(placeholders(among.count))) ORDER BY sha256
            """, arguments: [version, mark] + StatementArguments(among))
    }

    /// The stored text (or failure) of a blob for `version`.
    public static func storedText(_ db: Database, _ blob: BlobID, version: String) throws -> StoredText? {
        guard let row = try Row.fetchOne(db, sql: "SELECT state, text, error FROM \(TextOnce.view) WHERE sha256 = ? AND extractor = ?",
                                         arguments: [blob, version]) else { return nil }
        return row["state"] == "failed" ? StoredText(text: nil, error: row["error"]) : StoredText(text: row["text"], error: nil)
    }
}
