import BlobStore
import GRDB

/// An attachment with its blob's size, as `list`, `show` and a sync present it.
public struct AttachedFile: Sendable, Equatable {
    public var sha256: BlobID
    public var filename: String
    public var mediaType: String
    public var size: Int64
}

/// The `attachments` table. New attachments are inserted by `CatalogWriter.insertAttachment`.
extension Catalog {
    public static func attachments(_ db: Database, of receiptID: ReceiptID) throws -> [Attachment] {
        try Attachment.fetchAll(db.cachedStatement(sql: """
            SELECT r.id AS receiptID, a.sha256, a.filename, a.mediaType, a.position
            FROM receipts r JOIN attachments a ON a.receiptRow = r.rowNumber WHERE r.id = ? ORDER BY a.position
            """), arguments: [receiptID])
    }

    /// The files of these receipts, by receipt id (that of the receipt whose row they are keyed by,
    /// not the copy they keep, which fsck checks), each in position order.
    public static func files(_ db: Database, of receiptIDs: [ReceiptID]) throws -> [ReceiptID: [AttachedFile]] {
        guard !receiptIDs.isEmpty else { return [:] }
        return try files(db, filesSQL(receipt: "r.id", join: "JOIN receipts r ON r.rowNumber = a.receiptRow", where: byIDs(receiptIDs.count)),
                         StatementArguments(receiptIDs))
    }

    /// The files of the receipts with these row numbers, by row number: `list` asks for a chunk of
    /// receipts' files at a time, and by row they sit together (`ReceiptRows`).
    public static func files(_ db: Database, ofRows rows: [Int64]) throws -> [Int64: [AttachedFile]] {
        guard !rows.isEmpty else { return [:] }
        return try files(db, filesSQL(receipt: "a.receiptRow", join: "", where: byRows(rows.count)), StatementArguments(rows))
    }

    static func byIDs(_ count: Int) -> String { "a.receiptRow IN (SELECT rowNumber FROM receipts WHERE id IN (\(placeholders(count))))" }
    static func byRows(_ count: Int) -> String { "a.receiptRow IN (\(placeholders(count)))" }

    /// The files of the attachments `condition` selects (on `a`), each with `receipt` first. The size
    /// the attachment carries; the blob row's only for a row the repair has not yet given one (as when
    /// the blob row was joined, a file whose blob row is gone is left out: fsck's).
    static func filesSQL(receipt: String, join: String, where condition: String) -> String {
        """
        SELECT \(receipt), a.sha256, a.filename, a.mediaType,
               coalesce(a.size, (SELECT b.size FROM blobs b WHERE b.sha256 = a.sha256))
        FROM attachments a \(join)
        WHERE \(condition)
        ORDER BY a.receiptRow, a.position
        """
    }

    private static func files<Key: Hashable & DatabaseValueConvertible & StatementColumnConvertible>(
        _ db: Database, _ sql: String, _ arguments: StatementArguments) throws -> [Key: [AttachedFile]] {
        var files: [Key: [AttachedFile]] = [:]
        // Prepared once per list length: a sync asks for one receipt's files at a time, `list` for 256
        // receipts' at a time, so a command prepares one or two of these.
        let rows = try Row.fetchCursor(db.cachedStatement(sql: sql), arguments: arguments)
        while let row = try rows.next() {
            guard let size = try row.decode(Int64?.self, atIndex: 4) else { continue }
            files[try row.decode(Key.self, atIndex: 0), default: []].append(
                AttachedFile(sha256: try row.decode(atIndex: 1), filename: try row.decode(atIndex: 2),
                             mediaType: try row.decode(atIndex: 3), size: size))
        }
        return files
    }

    /// How many attachments carry a size other than their blob row's (attachments without a blob row
    /// are `missing-blob` problems, not counted here).
    public static func attachmentSizeProblems(_ db: Database) throws -> Int {
        // The blobs' sizes read in one pass first: looked up per attachment, each read a random page of
        // the blobs table, which holds the inline bytes (8.4 s at a million receipts, 2.0 s so).
        try Int.fetchOne(db, sql: """
            WITH b AS MATERIALIZED (SELECT sha256, size FROM blobs)
            SELECT count(*) FROM b JOIN attachments a ON a.sha256 = b.sha256 WHERE a.size IS NOT b.size
            """) ?? 0
    }

    /// How many attachments name a receipt id other than that of the receipt whose row they are keyed
    /// by (those whose row is gone are `missingReceipts`, not counted here).
    public static func attachmentIDProblems(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: """
            SELECT count(*) FROM attachments a JOIN receipts r ON r.rowNumber = a.receiptRow WHERE a.receiptID IS NOT r.id
            """) ?? 0
    }

    /// Gives every attachment with a blob row that row's size (the migration to v6, fsck's repair and
    /// the catalog rebuild).
    static let resizeAttachmentsSQL = """
        UPDATE attachments SET size = b.size FROM blobs b WHERE b.sha256 = attachments.sha256 AND attachments.size IS NOT b.size
        """

    /// The position after the receipt's last attachment (0 when it has none). A cached statement:
    /// a manifest asks this once per row.
    public static func nextPosition(_ db: Database, receiptID: ReceiptID) throws -> Int {
        (try Int.fetchOne(db.cachedStatement(sql: "SELECT max(position) FROM attachments WHERE receiptRow = (SELECT rowNumber FROM receipts WHERE id = ?)"),
                          arguments: [receiptID]) ?? -1) + 1
    }

    /// The receipt of `zone` that already holds this content under this file name, if any.
    public static func receipt(_ db: Database, holding id: BlobID, named filename: String, inZone zone: String) throws -> ReceiptID? {
        // CROSS JOIN keeps SQLite on the blob index: joining from receipts scans the whole zone per file.
        // A cached statement: a manifest asks this once per row.
        try ReceiptID.fetchOne(db.cachedStatement(sql: """
            SELECT r.id FROM attachments a CROSS JOIN receipts r ON r.rowNumber = a.receiptRow
            WHERE a.sha256 = ? AND a.filename = ? AND r.zone = ? LIMIT 1
            """), arguments: [id, filename, zone])
    }
}

extension CatalogWriter {
    /// Gives attachments their blob's size where they carry another (or none); returns how many changed.
    @discardableResult
    public func resizeAttachments() throws -> Int {
        try db.execute(sql: Catalog.resizeAttachmentsSQL)
        return db.changesCount
    }

    /// Gives every attachment the id of the receipt whose row it is keyed by; returns how many changed.
    @discardableResult
    public func reidentifyAttachments() throws -> Int {
        try db.execute(sql: """
            UPDATE attachments SET receiptID = r.id FROM receipts r
            WHERE r.rowNumber = attachments.receiptRow AND attachments.receiptID IS NOT r.id
            """)
        return db.changesCount
    }

    public func deleteAttachment(_ attachment: Attachment) throws {
        try requireTriggers("deleteAttachment")
        try db.execute(sql: "DELETE FROM attachments WHERE receiptRow = (SELECT rowNumber FROM receipts WHERE id = ?) AND sha256 = ?",
                       arguments: [attachment.receiptID, attachment.sha256])
    }

    /// Makes the receipt hold exactly these files, in this order (a version pulled from the server;
    /// every blob must have its row already).
    public func replaceAttachments(of receiptID: ReceiptID, with files: [(sha256: BlobID, filename: String, mediaType: String)]) throws {
        try requireTriggers("replaceAttachments")
        // Prepared once: these fire the search index's triggers, which preparing compiles in (a pull of
        // 5,000 receipts spent a third of its time preparing these two).
        let row = try Int64.fetchOne(db.cachedStatement(sql: "SELECT rowNumber FROM receipts WHERE id = ?"), arguments: [receiptID])
        try db.cachedStatement(sql: "DELETE FROM attachments WHERE receiptRow = ?").execute(arguments: [row])
        for (position, f) in files.enumerated() {
            // The size from the blob row, which must exist (the foreign key fails the transaction
            // otherwise), as must the receipt (NOT NULL fails it).
            try db.cachedStatement(sql: """
                INSERT INTO attachments(receiptRow, receiptID, sha256, filename, mediaType, position, size)
                VALUES (?, ?, ?, ?, ?, ?, (SELECT size FROM blobs WHERE sha256 = ?))
                """).execute(arguments: [row, receiptID, f.sha256, f.filename, f.mediaType, position, f.sha256])
        }
    }
}
