import BlobStore
import Foundation
import GRDB
import ReceiptCatalog
import ReceiptText

/// What `index` did.
public struct IndexOutcome: Codable, Sendable, Equatable {
    /// Blobs whose text was extracted (and stored) by this run.
    public var extracted: Int
    /// Blobs an extractor failed on (recorded with the reason), or whose bytes did not verify (left pending).
    public var failed: Int
    /// Blobs still without text: a tool they need is missing, or they were not asked for.
    public var pending: Int
    /// Tools missing on this machine, each with the Debian package that provides it.
    public var missingTools: [MissingTool]
    /// Blobs that failed, with the reason.
    public var failures: [Failure]
    /// Receipts whose new text filled or suggested a field (`review` lists them).
    public var read = 0

    public struct MissingTool: Codable, Sendable, Equatable, Hashable {
        public var tool: String
        public var package: String
    }

    public struct Failure: Codable, Sendable, Equatable {
        public var sha256: String
        public var reason: String
    }
}

public struct IndexProgress: Sendable {
    public var done: Int
    public var total: Int
}

extension Vault {
    /// Extracts the text of every referenced blob that has none for the current extractor version
    /// (only those of `only` when given) and stores it, batch by batch: a run killed at any point
    /// loses at most the batch in hand, and the next run goes on from there. `rebuild` first makes
    /// every blob pending again. Blobs are read verified into a private temporary folder and handed to
    /// one extractor process per core. A blob an extractor fails on is recorded as failed with the
    /// reason and not tried again (until `rebuild`); a blob whose tool is missing stays pending.
    public func indexText(only: Set<String>? = nil, rebuild: Bool = false, tools: ExtractorTools,
                          progress: (@Sendable (IndexProgress) -> Void)? = nil) throws -> IndexOutcome {
        let version = TextExtractor.version
        if rebuild { try wrapped { try mutate { w in try w.markTextStale() } } }
        let total = try only?.count ?? wrapped { try catalog.read { db in try Catalog.textCounts(db, version: version).pending } }
        var outcome = IndexOutcome(extracted: 0, failed: 0, pending: 0, missingTools: [], failures: [])
        var missing = Set<IndexOutcome.MissingTool>()
        let extractor = TextExtractor(tools: tools)
        var after: BlobID?
        var seen = 0
        // Asked for a few blobs (after an import): look up only those, in chunks SQLite accepts.
        var among = only.map { $0.compactMap(BlobID.init(hex:)).sorted() }
        // Files a tool reads (OCR: seconds each) are committed a few at a time, so a kill loses little;
        // files read as they are (plain text: microseconds) a page at a time, so commits do not dominate.
        let pageSize = 512
        let toolBatch = max(8, Parallel.cores * 4)
        while true {
            let chunk = among.map { Array($0.prefix(500)) }
            let batch = try wrapped {
                try catalog.read { db in
                    try Catalog.pendingText(db, version: version, after: after, among: chunk, limit: pageSize)
                }
            }
            guard let last = batch.last else {
                guard let rest = among, rest.count > 500 else { break }
                among = Array(rest.dropFirst(500))
                after = nil
                continue
            }
            after = last.sha256
            let quick = batch.filter { !TextExtractor.needsTool(mediaType: $0.mediaType) }
            let slow = batch.filter { TextExtractor.needsTool(mediaType: $0.mediaType) }
            let groups = [quick] + stride(from: 0, to: slow.count, by: toolBatch).map {
                Array(slow[$0..<min($0 + toolBatch, slow.count)])
            }
            for wanted in groups where !wanted.isEmpty {
                let results = Parallel.mapLargestFirst(wanted, cost: { $0.size }) { [self] item in
                    try extractText(item, extractor: extractor)
                }
                var toStore: [(BlobID, Extraction)] = []
                for (item, result) in zip(wanted, results) {
                    switch result {
                    case .success(.unavailable(let tool, let package)):
                        missing.insert(IndexOutcome.MissingTool(tool: tool, package: package))
                    case .success(let extraction):
                        toStore.append((item.sha256, extraction))
                    case .failure(let error):
                        // The bytes did not verify (or could not be read): left pending for after `fsck --repair`.
                        outcome.failed += 1
                        outcome.failures.append(.init(sha256: item.sha256.hex, reason: "\(VaultError.wrap(error))"))
                    }
                }
                // The text, the readings and the signatures of the receipts holding it: one transaction.
                let withText = toStore.compactMap { blob, extraction in if case .text = extraction { blob } else { nil } }
                outcome.read += try wrapped {
                    try mutate { w in
                        for (blob, extraction) in toStore {
                            switch extraction {
                            case .text(let text):
                                try w.storeText(of: blob, version: version, text: text, error: nil)
                            case .failed(let reason):
                                try w.storeText(of: blob, version: version, text: nil, error: reason)
                            case .unavailable: break
                            }
                        }
                        return try readReceipts(holding: withText, w)
                    }
                }
                for (sha256, extraction) in toStore {
                    if case .failed(let reason) = extraction {
                        outcome.failed += 1
                        outcome.failures.append(.init(sha256: sha256.hex, reason: reason))
                    } else {
                        outcome.extracted += 1
                    }
                }
                seen += wanted.count
                progress?(IndexProgress(done: min(seen, total), total: total))
            }
        }
        outcome.pending = try wrapped { try catalog.read { db in try Catalog.textCounts(db, version: version).pending } }
        outcome.missingTools = missing.sorted { $0.tool < $1.tool }
        return outcome
    }

    /// Counts of the text index: blobs with text (or a recorded failure) and blobs still pending.
    public func textCounts() throws -> TextCounts {
        try wrapped { try catalog.read { db in try Catalog.textCounts(db, version: TextExtractor.version) } }
    }

    /// One blob: its verified bytes copied into a private folder, then the extractor on that copy.
    func extractText(_ item: PendingText, extractor: TextExtractor) throws -> Extraction {
        // No extractor takes this type: recorded as without text, and its bytes (a 1 GiB archive,
        // say) are not read again after the import hashed them.
        guard TextExtractor.reads(mediaType: item.mediaType) else { return .text("") }
        let record = try blobRecord(item.sha256.hex)
        let scratch = try Scratch()
        let file = scratch.path + "/blob"
        try copyBlob(record, to: file)
        return extractor.extract(file: file, mediaType: item.mediaType, scratch: scratch.path)
    }
}
