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
    var items: [(Item, PreparedBlob)] = []
    private let blobs: BlobStore

    init(blobs: BlobStore) { self.blobs = blobs }

    deinit {
        for (_, blob) in items { if let staged = blob.staged { blobs.discard(staged) } }
    }
}

extension Vault {
    /// THE way bytes enter the vault (docs/DESIGN.md, "The ingest path"). Splits `items` into batches
    /// within `budget`; per batch: prepares every source on every core (reading, hashing, staging with
    /// direct I/O), installs the staged blobs (renames, then one syncfs), then in ONE transaction inserts
    /// the blob rows and runs `rows` with the batch's blobs. So a blob is durable before any row
    /// refers to it (I1), and whatever `rows` writes commits with the blob rows. Batch N+1 is prepared
    /// while batch N is installed and committed (on a thread of its own; batches commit in order), and
    /// `committed` gets each batch's result once it committed. A source that cannot be read (an
    /// `IOError`) is handed to `unreadable` and left out; any other failure stops the ingest, batches
    /// before it staying committed. The caller holds the vault lock shared (or exclusive).
    func ingest<Item: Sendable, Out: Sendable>(
        _ items: [Item], into target: Catalog? = nil, budget: BatchBudget = BatchBudget(),
        source: @escaping @Sendable (Item) -> IngestSource,
        unreadable: (Item, IOError) throws -> Void = { _, error in throw error },
        rows: @escaping @Sendable (CatalogWriter, [(Item, Ingested)]) throws -> Out,
        committed: (Out, _ itemsDone: Int) throws -> Void
    ) throws {
        let target = target ?? catalog
        var committing: Parallel.Background<Result<Out, Error>>?
        defer { _ = committing?.wait() }
        var start = items.startIndex
        while start < items.endIndex {
            var end = start
            var limits = budget
            while end < items.endIndex && !limits.isFull {
                let (size, inline) = cost(source(items[end]))
                limits.add(size: size, inline: inline)
                end += 1
            }
            let prepared = try prepareBatch(items[start..<end], source: source, unreadable: unreadable)
            if let previous = committing { try committed(try previous.wait().get(), start) }
            committing = Parallel.Background { Result { try self.install(prepared, into: target, rows: rows) } }
            start = end
        }
        if let last = committing {
            committing = nil
            try committed(try last.wait().get(), items.count)
        }
    }

    /// `ingest` of one batch whose rows are written by the calling thread: for callers with a handful
    /// of sources (attach, a sync page, a repair).
    public func ingestOnce<Out>(_ sources: [IngestSource], rows: (CatalogWriter, [Ingested]) throws -> Out) throws -> Out {
        try ingestOnce(sources, into: nil, rows: rows)
    }

    func ingestOnce<Out>(_ sources: [IngestSource], into target: Catalog?,
                         rows: (CatalogWriter, [Ingested]) throws -> Out) throws -> Out {
        let prepared = try prepareBatch(ArraySlice(sources.indices), source: { sources[$0] }, unreadable: { _, e in throw e })
        return try install(prepared, into: target ?? catalog) { w, done in try rows(w, done.map(\.1)) }
    }

    private func cost(_ source: IngestSource) -> (size: Int64, inline: Bool) {
        switch source {
        case .file(let input): (input.status.size, input.status.size < settings.inlineThreshold)
        case .bytes(let bytes): (Int64(bytes.count), Int64(bytes.count) < settings.inlineThreshold)
        case .staged(let staged): (staged.storedSize, false)
        case .adopted: (0, false)
        }
    }

    /// Prepares the sources of a batch on every core.
    private func prepareBatch<Item: Sendable>(_ batch: ArraySlice<Item>, source: @escaping @Sendable (Item) -> IngestSource,
                                              unreadable: (Item, IOError) throws -> Void) throws -> PreparedBatch<Item> {
        // Two threads per core: staging writes go straight to the device (direct I/O) and wait for it,
        // and the other thread of the core hashes meanwhile.
        let outcomes = Parallel.mapLargestFirst(Array(batch), workers: 2 * Parallel.cores, cost: { self.cost(source($0)).size }) { item in
            try self.prepare(source(item))
        }
        let prepared = PreparedBatch<Item>(blobs: blobs)
        var firstError: Error?
        for (item, outcome) in zip(batch, outcomes) {
            switch outcome {
            case .success(let blob): prepared.items.append((item, blob))
            case .failure(let error as IOError) where firstError == nil: try unreadable(item, error)
            case .failure(let error): firstError = firstError ?? error
            }
        }
        if let firstError { throw firstError }
        return prepared
    }

    /// Installs the batch's staged blobs durably, then in one transaction inserts their rows and runs `rows`.
    private func install<Item: Sendable, Out>(_ batch: PreparedBatch<Item>, into target: Catalog,
                                              rows: (CatalogWriter, [(Item, Ingested)]) throws -> Out) throws -> Out {
        var installed: [BlobID: StoredBlob] = [:]
        let staged = batch.items.compactMap(\.1.staged)
        if !staged.isEmpty {
            for stored in try blobs.install(staged) { installed[stored.id] = installed[stored.id] ?? stored }
        }
        return try target.transaction { w in
            var done: [(Item, Ingested)] = []
            done.reserveCapacity(batch.items.count)
            for (item, blob) in batch.items {
                let known = try recordBlob(w, blob, installed: blob.adopted ?? installed[blob.id])
                done.append((item, Ingested(id: blob.id, size: blob.size, mediaType: blob.mediaType, deduplicated: known)))
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
