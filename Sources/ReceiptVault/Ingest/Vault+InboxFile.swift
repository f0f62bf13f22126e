import BlobStore
import Foundation
import ReceiptCatalog

/// What became of one file of a watched inbox.
public enum InboxFileResult: Sendable {
    /// A new receipt (import's shape).
    case imported(ImportedFile)
    /// Its bytes were already a receipt of the zone (under any name): nothing was added.
    case duplicate(sha256: String, receipt: ReceiptID)
    /// It changed or went away between the moment it was judged complete and the commit: nothing
    /// was committed, and it is to be judged again.
    case changed
    /// It could not be read (why, in one line).
    case failed(String)
}

extension InputFile {
    init(watched path: String, size: Int64, unchanged: @escaping @Sendable () -> Bool) {
        self.path = path
        self.size = size
        status = nil  // moved out of the inbox once imported: nothing for the stat cache to keep
        checked = nil
        self.unchanged = unchanged
    }
}

extension Vault {
    /// One complete file of a watched inbox (`receipt watch`), read once through the ingest path; in
    /// the transaction that would commit it, a receipt of `zone` unless its bytes are one already.
    /// `unchanged` says whether the file is still as it was judged complete: the ingest path asks it
    /// after the read, just before the commit, and commits nothing when it says no.
    public func importInboxFile(_ path: String, zone: String,
                                unchanged: @escaping @Sendable () -> Bool) throws -> InboxFileResult {
        try requireWritable(zone: zone)
        guard let st = try wrapped({ try FileSystem.status(path) }), st.isRegular else { return .changed }
        var result = InboxFileResult.changed
        do {
            try ingest([InputFile(watched: path, size: st.size, unchanged: unchanged)], source: { .file($0) },
                       failed: { _, error in
                           guard let error = error as? PathError else { throw error }
                           // Gone or replaced by a link since it was listed: nothing to report.
                           if [ENOENT, ELOOP, ENOTDIR].contains(error.errno) { return error.description }
                           result = .failed(error.description)
                           return error.description
                       },
                       rows: { w, batch in try self.inboxRows(w, batch, zone: zone) },
                       committed: { out, _ in if let out { result = out } })
        } catch is SourceChanged {
            return .changed
        } catch {
            throw VaultError.wrap(error)
        }
        return result
    }

    private func inboxRows(_ w: CatalogWriter, _ batch: [(InputFile, IngestOutcome)], zone: String) throws -> InboxFileResult? {
        guard case (_, .ingested(let blob))? = batch.first else { return nil }
        if let held = try Catalog.receipt(w.db, holdingContent: blob.id, inZone: zone) {
            return .duplicate(sha256: blob.id.hex, receipt: held)
        }
        return try insertImported(w, batch, zone: zone, metadata: ReceiptMetadata()).first.map { .imported($0) }
    }
}
