import BlobStore
import Foundation
import GRDB
import ReceiptCatalog

/// Where the bytes of one blob come from.
public enum IngestSource: Sendable {
    /// A regular file on disk: read (small), or staged under interim/ (large), or known from the stat cache.
    case file(InputFile)
    /// Bytes in memory.
    case bytes([UInt8])
    /// A verified download already staged and encoded as the vault stores blobs.
    case staged(StagedBlob)
    /// A blob file already under its address in blobs/ (left by a killed command, or found by fsck):
    /// verified before its row is written.
    case adopted(BlobID)
}

/// A blob the ingest path made durable and recorded, handed to the caller's rows.
public struct Ingested: Sendable {
    public let id: BlobID
    public let size: Int64
    /// Sniffed from the first bytes (and the file name of a `.file`).
    public let mediaType: String
    /// The vault held the blob before: no new bytes were stored.
    public let deduplicated: Bool
}

/// What became of one item of an ingest, as its batch's rows see it.
enum IngestOutcome: Sendable {
    /// The item brought no bytes (its row refers to a blob the vault holds, or an earlier item brings).
    case none
    case ingested(Ingested)
    /// Its source could not be read; the caller's `failed` said so and chose to go on.
    case failed(String)
}

/// A source's content made ready to reference: small bytes for the catalog, a staged blob to
/// install, a file already in the tree, or (from the stat cache) a blob the catalog holds already.
struct PreparedBlob: Sendable {
    let id: BlobID
    let size: Int64
    let mediaType: String
    let inline: [UInt8]?
    let staged: StagedBlob?
    /// An adopted file, verified: as the tree stores it.
    var adopted: StoredBlob? = nil
}

/// The items of one batch, prepared. Staging files it still holds are dropped when it goes (after
/// an install they are gone already).
final class PreparedBatch<Item: Sendable>: @unchecked Sendable {
    enum State { case none, prepared(PreparedBlob), failed(String) }
    var items: [(Item, State)] = []
    private let blobs: BlobStore

    init(blobs: BlobStore) { self.blobs = blobs }

    deinit {
        for case (_, .prepared(let blob)) in items { if let staged = blob.staged { blobs.discard(staged) } }
    }
}

extension Vault {
    /// THE way bytes enter the vault (docs/DESIGN.md, "The ingest path"). Splits `items` into batches
    /// within `budget` (a batch at least, even of none); per batch: prepares every item's source on
    /// every core (reading, hashing, staging with direct I/O), installs the staged blobs (renames, then
    /// one syncfs), then in ONE transaction inserts the blob rows (in address order) and runs `rows`
    /// with each item's outcome. So a blob is durable before any row refers to it (I1), and whatever
    /// `rows` writes (receipts, attachments, the outbox) commits with the blob rows or not at all.
    /// Batch N+1 is prepared while batch N is installed and committed on a thread of its own (batches
    /// commit in order), and `committed` gets each batch's result and the count of items done once it
    /// committed. `source` is asked once per item, in order, on the calling thread (nil: the item
    /// brings no bytes). A source that cannot be read goes to `failed`, which throws to stop the
    /// ingest or returns the message its item's outcome carries; batches committed before a failure
    /// stay committed. The caller holds the vault lock shared (or exclusive).
    func ingest<Item: Sendable, Out: Sendable>(
        _ items: [Item], into target: Catalog? = nil, budget: BatchBudget = BatchBudget(),
        source: (Item) -> IngestSource?,
        failed: (Item, Error) throws -> String = { _, error in throw error },
        rows: @escaping @Sendable (CatalogWriter, [(Item, IngestOutcome)]) throws -> Out,
        committed: (Out, _ itemsDone: Int) throws -> Void
    ) throws {
        let target = target ?? catalog
        var committing: Parallel.Background<Result<Out, Error>>?
        defer { _ = committing?.wait() }
        var start = items.startIndex
        repeat {
            var end = start
            var limits = budget
            var sources: [IngestSource?] = []
            while end < items.endIndex && !limits.isFull {
                let source = source(items[end])
                let (size, inline) = source.map(cost) ?? (0, true)
                limits.add(size: size, inline: inline)
                sources.append(source)
                end += 1
            }
            let prepared = try prepareBatch(Array(items[start..<end]), sources, failed: failed)
            if let previous = committing { try committed(try previous.wait().get(), start) }
            committing = Parallel.Background { Result { try self.install(prepared, into: target, rows: rows) } }
            start = end
        } while start < items.endIndex
        if let last = committing {
            committing = nil
            try committed(try last.wait().get(), items.count)
        }
    }

    /// `ingest` of one batch whose rows are written by the calling thread: for callers with a handful
    /// of sources (attach, a sync page, a repair). Any source that fails stops it.
    public func ingestOnce<Out>(_ sources: [IngestSource], rows: (CatalogWriter, [Ingested]) throws -> Out) throws -> Out {
        try ingestOnce(sources, into: nil, rows: rows)
    }

    func ingestOnce<Out>(_ sources: [IngestSource], into target: Catalog?,
                         rows: (CatalogWriter, [Ingested]) throws -> Out) throws -> Out {
        let prepared = try prepareBatch(Array(sources.indices), sources, failed: { _, error in throw error })
        return try install(prepared, into: target ?? catalog) { w, done in
            try rows(w, done.compactMap { if case .ingested(let blob) = $0.1 { blob } else { nil } })
        }
    }

    private func cost(_ source: IngestSource) -> (size: Int64, inline: Bool) {
        switch source {
        case .file(let input): (input.size, input.size < settings.inlineThreshold)
        case .bytes(let bytes): (Int64(bytes.count), Int64(bytes.count) < settings.inlineThreshold)
        case .staged(let staged): (staged.storedSize, false)
        case .adopted: (0, false)
        }
    }

    /// Prepares the sources of a batch on every core.
    private func prepareBatch<Item: Sendable>(_ batch: [Item], _ sources: [IngestSource?],
                                              failed: (Item, Error) throws -> String) throws -> PreparedBatch<Item> {
        let work = sources.indices.filter { sources[$0] != nil }
        // Two threads per core: staging writes go straight to the device (direct I/O) and wait for it,
        // and the other thread of the core hashes meanwhile.
        let outcomes = Parallel.mapLargestFirst(work.compactMap { sources[$0] }, workers: 2 * Parallel.cores,
                                                cost: { self.cost($0).size }) { try self.prepare($0) }
        let prepared = PreparedBatch<Item>(blobs: blobs)
        prepared.items = batch.map { ($0, .none) }
        for (index, outcome) in zip(work, outcomes) {
            if case .success(let blob) = outcome { prepared.items[index].1 = .prepared(blob) }
        }
        for (index, outcome) in zip(work, outcomes) {
            if case .failure(let error) = outcome { prepared.items[index].1 = .failed(try failed(batch[index], error)) }
        }
        return prepared
    }

    /// Installs the batch's staged blobs durably, then in one transaction inserts their rows (in
    /// address order: each page of the blobs' index is then visited once) and runs `rows`.
    private func install<Item: Sendable, Out>(_ batch: PreparedBatch<Item>, into target: Catalog,
                                              rows: (CatalogWriter, [(Item, IngestOutcome)]) throws -> Out) throws -> Out {
        var installed: [BlobID: StoredBlob] = [:]
        let staged = batch.items.compactMap { if case .prepared(let blob) = $0.1 { blob.staged } else { nil } }
        if !staged.isEmpty {
            for stored in try blobs.install(staged) { installed[stored.id] = installed[stored.id] ?? stored }
        }
        return try target.transaction { w in
            var done = [(Item, IngestOutcome)]()
            done.reserveCapacity(batch.items.count)
            var order: [(BlobID, Int)] = []
            for (index, (item, state)) in batch.items.enumerated() {
                switch state {
                case .none: done.append((item, .none))
                case .failed(let message): done.append((item, .failed(message)))
                case .prepared(let blob):
                    done.append((item, .none))
                    order.append((blob.id, index))
                }
            }
            order.sort { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
            for (_, index) in order {
                guard case .prepared(let blob) = batch.items[index].1 else { continue }
                let known = try recordBlob(w, blob, installed: blob.adopted ?? installed[blob.id])
                done[index].1 = .ingested(Ingested(id: blob.id, size: blob.size, mediaType: blob.mediaType, deduplicated: known))
            }
            return try rows(w, done)
        }
    }

    /// Installs the staged blobs of a batch (renames, one fsync per folder); nothing is referenced yet.
    func installStaged(_ blobsToInstall: [PreparedBlob]) throws -> [BlobID: StoredBlob] {
        let staged = blobsToInstall.compactMap(\.staged)
        guard !staged.isEmpty else { return [:] }
        var map: [BlobID: StoredBlob] = [:]
        for stored in try blobs.install(staged) { map[stored.id] = map[stored.id] ?? stored }
        return map
    }

    /// Inserts the blob's row unless present; returns whether the vault already had the blob. The
    /// only place the vault asks for a blob row.
    func recordBlob(_ w: CatalogWriter, _ blob: PreparedBlob, installed: StoredBlob?) throws -> Bool {
        if let inline = blob.inline {
            return try !w.insertBlob(NewBlob(inline: inline, id: blob.id))
        }
        // The blob file was installed before this transaction, or the catalog holds the blob already.
        guard let installed else {
            if try BlobRecord.exists(w.db, key: blob.id.hex) { return true }
            throw VaultError(.io, "blob \(blob.id) is not in the catalog nor staged; re-run the import")
        }
        let inserted = try w.insertBlob(NewBlob(external: blob.id, size: installed.size, storedSize: installed.storedSize,
                                                encoding: installed.encoding))
        return !inserted || installed.deduplicated
    }
}
