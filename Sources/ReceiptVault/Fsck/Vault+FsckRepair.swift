import BlobStore
import Foundation
import GRDB
import ReceiptCatalog

extension Vault {
    static let recoveredNote = "recovered by `receipt fsck --repair`: the catalog had lost this receipt's record"

    /// Moves a bad file into quarantine/ (never deleting it), recording where in the problem.
    func quarantineInto(_ problem: inout FsckProblem, _ path: String, repairedByMove: Bool = true) {
        do {
            let target = try blobs.quarantine(path)
            problem.repaired = repairedByMove
            problem.detail += "; moved to \(target)"
        } catch {
            problem.detail += "; could not be moved to quarantine: \(VaultError.wrap(error))"
        }
    }

    /// A referenced blob that is corrupt or missing: set the bad file aside, then fetch the blob back
    /// from the sync server when there is one.
    func refetchInto(_ problem: inout FsckProblem, _ id: BlobID, _ options: FsckOptions, movingAside path: String) async throws {
        if FileSystem.exists(path) {
            quarantineInto(&problem, path, repairedByMove: false)
        }
        if let stored = await refetch(id, options) {
            try catalog.transaction { w in
                try w.rerecordBlob(id, size: stored.size, storedSize: stored.storedSize, encoding: stored.encoding)
            }
            problem.repaired = true
            problem.detail += "; fetched back from the sync server"
        } else {
            problem.detail += options.refetcher == nil
                ? "; no sync server is set to fetch it back from" : "; the sync server could not give it back"
        }
    }

    func refetch(_ id: BlobID, _ options: FsckOptions) async -> StoredBlob? {
        guard let refetcher = options.refetcher else { return nil }
        guard let stored = try? await refetcher.fetch(id, into: blobs), stored.id == id else { return nil }
        // Trust nothing fetched: it must verify here, as installed.
        guard (try? blobs.verify(id, encoding: stored.encoding)) != nil else { return nil }
        return stored
    }

    /// Records good blob files no row described and makes each an attachment of a new receipt in
    /// zone `recovered`. Returns the receipts' ids.
    func adoptIntoRecovered(_ files: [BlobID]) throws -> [String] {
        try ingestOnce(files.sorted().map { .adopted($0) }) { w, adopted in
            try ensureRecoveredZone(w.db)
            return try adopted.map { try Self.insertRecoveredReceipt(w, $0.id, mediaType: $0.mediaType) }
        }
    }

    func ensureRecoveredZone(_ db: Database) throws {
        try Zone(name: Zone.recovered, createdAt: nowMillis()).insert(db, onConflict: .ignore)
    }

    static func insertRecoveredReceipt(_ w: CatalogWriter, _ id: BlobID, mediaType: String) throws -> String {
        let (db, now) = (w.db, w.now)
        let receipt = Receipt(id: UUID().uuidString.lowercased(), zone: Zone.recovered,
                              note: "recovered by `receipt fsck --repair`: blob \(id.hex) was in the vault without a catalog record",
                              createdAt: now, modifiedAt: now)
        try receipt.insert(db)
        try Attachment(receiptID: receipt.id, sha256: id, filename: "recovered-\(id.hex.prefix(12))" + fileExtension(mediaType),
                       mediaType: mediaType, position: 0).insert(db)
        try w.recordChange(receipt.id, zone: Zone.recovered, .upsert)
        return receipt.id
    }

    static func fileExtension(_ mediaType: String) -> String {
        switch mediaType {
        case "application/pdf": return ".pdf"
        case "image/jpeg": return ".jpg"
        case "image/png": return ".png"
        case "image/tiff": return ".tiff"
        case "image/heic": return ".heic"
        case "image/gif": return ".gif"
        case "image/webp": return ".webp"
        case "text/plain": return ".txt"
        case "text/csv": return ".csv"
        case "application/json": return ".json"
        default: return ""
        }
    }

    struct EnoughBytes: Error {}

    /// The media type of a blob from its first 4 KiB of original bytes.
    static func sniffMediaType(_ store: BlobStore, _ id: BlobID, _ encoding: BlobEncoding) throws -> String {
        var head: [UInt8] = []
        do {
            try store.read(id, encoding: encoding) { piece in
                head += piece.prefix(4096 - head.count)
                if head.count >= 4096 { throw EnoughBytes() }
            }
        } catch is EnoughBytes {}
        return head.withUnsafeBytes { MediaType.of(head: $0, filename: "") }
    }
}
