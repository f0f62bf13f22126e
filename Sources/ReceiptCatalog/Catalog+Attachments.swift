import BlobStore
import GRDB

/// An attachment with its blob's size, as `list`, `show` and a sync present it.
public struct AttachedFile: Sendable, Equatable {
    public var receiptID: String
    public var sha256: BlobID
    public var filename: String
    public var mediaType: String
    public var size: Int64
}

/// The `attachments` table. New attachments are inserted by `CatalogWriter.insertAttachment`.
extension Catalog {
    public static func attachments(_ db: Database, of receiptID: String) throws -> [Attachment] {
        try Attachment.filter(Column("receiptID") == receiptID).order(Column("position")).fetchAll(db)
    }

    /// The files of these receipts, by receipt, each in position order.
    public static func files(_ db: Database, of receiptIDs: [String]) throws -> [String: [AttachedFile]] {
        guard !receiptIDs.isEmpty else { return [:] }
        return try files(db, "WHERE a.receiptID IN (\(databaseQuestionMarks(count: receiptIDs.count)))",
                         StatementArguments(receiptIDs))
    }

    private static func files(_ db: Database, _ scopeSQL: String, _ args: StatementArguments) throws -> [String: [AttachedFile]] {
        var files: [String: [AttachedFile]] = [:]
        let rows = try Row.fetchCursor(db, sql: """
            SELECT a.receiptID, a.sha256, a.filename, a.mediaType, b.size
            FROM attachments a JOIN blobs b ON b.sha256 = a.sha256
            \(scopeSQL)
            ORDER BY a.receiptID, a.position
            """, arguments: args)
        while let row = try rows.next() {
            let receiptID: String = row[0]
            files[receiptID, default: []].append(AttachedFile(receiptID: receiptID, sha256: try row.decode(atIndex: 1),
                                                              filename: row[2], mediaType: row[3], size: row[4]))
        }
        return files
    }

    /// The position after the receipt's last attachment (0 when it has none). A cached statement:
    /// a manifest asks this once per row.
    public static func nextPosition(_ db: Database, receiptID: String) throws -> Int {
        (try Int.fetchOne(db.cachedStatement(sql: "SELECT max(position) FROM attachments WHERE receiptID = ?"),
                          arguments: [receiptID]) ?? -1) + 1
    }

    /// The receipt of `zone` that already holds this content under this file name, if any.
    public static func receipt(_ db: Database, holding id: BlobID, named filename: String, inZone zone: String) throws -> String? {
        // CROSS JOIN keeps SQLite on the blob index: joining from receipts scans the whole zone per file.
        // A cached statement: a manifest asks this once per row.
        try String.fetchOne(db.cachedStatement(sql: """
            SELECT r.id FROM attachments a CROSS JOIN receipts r ON r.id = a.receiptID
            WHERE a.sha256 = ? AND a.filename = ? AND r.zone = ? LIMIT 1
            """), arguments: [id.hex, filename, zone])
    }
}

extension CatalogWriter {
    public func deleteAttachment(_ attachment: Attachment) throws {
        try requireTriggers("deleteAttachment")
        try attachment.delete(db)
    }

    /// Makes the receipt hold exactly these files, in this order (a version pulled from the server;
    /// every blob must have its row already).
    public func replaceAttachments(of receiptID: String, with files: [(sha256: BlobID, filename: String, mediaType: String)]) throws {
        try requireTriggers("replaceAttachments")
        try db.execute(sql: "DELETE FROM attachments WHERE receiptID = ?", arguments: [receiptID])
        for (position, f) in files.enumerated() {
            try Attachment(receiptID: receiptID, sha256: f.sha256, filename: f.filename, mediaType: f.mediaType,
                           position: position).insert(db)
        }
    }
}
