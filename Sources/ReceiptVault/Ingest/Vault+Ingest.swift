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
    /// A blob file already under its address in blobs/ (left by a killed command, or found by fsck),
    /// verified by whoever found it (only BlobStore makes a `VerifiedBlob`, by hashing the file):
    /// made durable where it is before its row is written, not hashed again.
    case adopted(VerifiedBlob)
}

/// A file that its `unchanged` hook, asked after its read, found no longer the file judged complete
/// (a watched file whose writer came back): its batch rolls back.
struct SourceChanged: Error {
    let path: String
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
    /// Bytes the catalog keeps.
    let inline: DurableBlob?
    let staged: StagedBlob?
    /// An adopted file, verified and made durable where it is.
    var adopted: DurableBlob? = nil
}

extension PreparedBlob {
    init(inline blob: DurableBlob, mediaType: String) {
        self.init(id: blob.id, size: blob.size, mediaType: mediaType, inline: blob, staged: nil)
    }
}

/// The items of one batch. Staging files it still holds are dropped when it goes (after an install
/// they are gone already).
final class PreparedBatch<Item: Sendable>: @unchecked Sendable {
    enum State: Sendable {
        case none
        case prepared(PreparedBlob)
        /// A small file, read inside the batch's transaction (slice by slice, the next slice read
        /// while one is inserted): the batch's small files are never all in memory at once.
        case deferred(InputFile)
        case failed(String)
        case done(Ingested)
    }
    var items: [(Item, State)] = []
    /// The `unchanged` hooks of the items read from watched files, by item.
    var unchanged: [Int: (path: String, check: @Sendable () -> Bool)] = [:]
    private let blobs: BlobStore

    init(blobs: BlobStore) { self.blobs = blobs }

    deinit {
        for case (_, .prepared(let blob)) in items { if let staged = blob.staged { blobs.discard(staged) } }
    }
}

extension Vault {
    /// Small files read at once inside a batch's transaction (the next slice is read meanwhile).
    static let ingestReadSlice = 1024

    /// THE way bytes enter the vault (docs/DESIGN.md, "The ingest path"). Splits `items` into batches
    /// within `budget` (a batch at least, even of none); per batch: prepares the sources on every core
    /// (large files staged with direct I/O, downloads and adopted files verified, the first slice of
    /// small files read), installs the staged blobs (renames, then one syncfs), then in ONE
    /// transaction inserts the blob rows (in address order) — reading the other small files slice by
    /// slice meanwhile — and runs `rows` with each item's outcome. So a blob is durable before any row
    /// refers to it (I1), and whatever `rows` writes (receipts, attachments, the outbox) commits with
    /// the blob rows or not at all. While batch N's rows are written (on a thread of its own; batches
    /// commit in order), batch N+1 is planned and prepared; `committed` gets each batch's result and
    /// the count of items done once it committed. `source` is asked once per item, in order, on the
    /// calling thread (nil: the item brings no bytes), after every source of the batch before was
    /// read. A source that cannot be read goes to `failed` (on the calling thread), which throws to
    /// stop the ingest or returns the message its item's outcome carries; batches committed before a
    /// failure stay committed. Holds the vault lock shared throughout (unless the running task holds
    /// it) and checks, before every commit, that the catalog is still the one this vault opened (a
    /// repair may have set it aside): every caller is under both.
    func ingest<Item: Sendable, Out: Sendable>(
        _ items: [Item], budget: BatchBudget = BatchBudget(),
        source: (Item) -> IngestSource?,
        failed: (Item, Error) throws -> String = { _, error in throw error },
        rows: @escaping @Sendable (CatalogWriter, [(Item, IngestOutcome)]) throws -> Out,
        committed: (Out, _ itemsDone: Int) throws -> Void
    ) throws {
        var iterator = items.makeIterator()
        try ingest(next: { iterator.next() }, budget: budget, source: source, failed: failed, rows: rows,
                   committed: committed)
    }

    /// `ingest` of items drawn one at a time from `next` (nil: no more), so that a caller with a
    /// million (a manifest's plan) never holds more than the batches in flight.
    func ingest<Item: Sendable, Out: Sendable>(
        next: () throws -> Item?, budget: BatchBudget = BatchBudget(),
        source: (Item) -> IngestSource?,
        failed: (Item, Error) throws -> String = { _, error in throw error },
        rows: @escaping @Sendable (CatalogWriter, [(Item, IngestOutcome)]) throws -> Out,
        committed: (Out, _ itemsDone: Int) throws -> Void
    ) throws {
        try locked(.shared) {
            try ingestLocked(next: next, budget: budget, source: source, failed: failed, rows: rows, committed: committed)
        }
    }

    private func ingestLocked<Item: Sendable, Out: Sendable>(
        next: () throws -> Item?, budget: BatchBudget, source: (Item) -> IngestSource?,
        failed: (Item, Error) throws -> String,
        rows: @escaping @Sendable (CatalogWriter, [(Item, IngestOutcome)]) throws -> Out,
        committed: (Out, _ itemsDone: Int) throws -> Void
    ) throws {
        /// The open transaction, and the batches written into it, each with the count of items done
        /// once it commits.
        var span: IngestSpan?
        var written: [(Out, Int)] = []
        /// The batch handed to the span whose rows are not written yet, and the items done after it.
        var inFlight: (batch: [(Item, Int)], flight: BatchInFlight<Out>, end: Int)?
        var start = 0  // items in the batches launched so far
        var ahead = try next()
        /// Ends the open span; once it committed, each of its batches goes to `committed`.
        func commitSpan() throws {
            guard let open = span else { return }
            span = nil
            let batches = written
            written = []
            try open.commit().get()
            for (out, done) in batches { try committed(out, done) }
        }
        /// Waits until the batch in flight is written into the span.
        func landInFlight() throws {
            guard let (batch, flight, end) = inFlight else { return }
            try flight.settle(batch, failed)
            inFlight = nil
            written.append((try flight.written.wait().get(), end))
        }
        do {
            repeat {
                // The batch before has read its sources: what failed there decides this batch's sources.
                if let (batch, flight, _) = inFlight { try flight.settle(batch, failed) }
                var limits = budget
                var batch: [Item] = []
                var sources: [IngestSource?] = []
                while let item = ahead, !limits.isFull {
                    let source = source(item)
                    let (size, inline) = source.map(cost) ?? (0, true)
                    limits.add(size: size, inline: inline)
                    batch.append(item)
                    sources.append(source)
                    ahead = try next()
                }
                let end = start + batch.count
                let prepared = try prepareBatch(batch, sources, failed: failed)
                try landInFlight()
                if let open = span, open.items >= budget.spanItemsLimit || open.bytes >= budget.spanBytesLimit {
                    try commitSpan()
                }
                let open = span ?? IngestSpan(catalog, beforeCommit: { try self.requireSameCatalog() })
                span = open
                open.items += batch.count
                open.bytes += limits.bytes
                let flight = BatchInFlight<Out>()
                let settle = flight.settle
                open.write(IngestSpan.Job(run: { w in
                    let result = Result { try self.write(prepared, w, settle: settle, rows: rows) }
                    flight.end(result)
                    _ = try result.get()  // a batch that fails rolls its span back
                }, abandon: { flight.end(.failure($0)) }))
                inFlight = (Array(zip(batch, batch.indices)), flight, end)
                start = end
            } while ahead != nil
            try landInFlight()
            try commitSpan()
        } catch {
            // The batch in flight fails unless its reads were settled already; if it was written, the
            // span commits with it, and what it holds is counted.
            if let (_, flight, end) = inFlight {
                flight.verdict.put(.failure(error))
                if case .success(let out) = flight.written.wait() { written.append((out, end)) }
            }
            if let open = span, case .success = open.commit() {
                for (out, done) in written { try? committed(out, done) }
            }
            throw error
        }
    }

    /// `ingest` of one batch, on the calling thread: for callers with a handful of sources (attach,
    /// a sync page, a repair). Any source that fails stops it. Under the vault lock, on the catalog
    /// this vault opened, as `ingest`.
    public func ingestOnce<Out>(_ sources: [IngestSource], rows: (CatalogWriter, [Ingested]) throws -> Out) throws -> Out {
        try locked(.shared) {
            let prepared = try prepareBatch(Array(sources.indices), sources, failed: { _, error in throw error })
            return try catalog.rowsTransaction { w in
                let out = try write(prepared, w, settle: { found in
                    if let first = found.first { throw first.error }
                    return []
                }) { w, done in
                    try rows(w, done.compactMap { if case .ingested(let blob) = $0.1 { blob } else { nil } })
                }
                try requireSameCatalog()
                return out
            }
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

    /// Prepares the sources of a batch on every core, but for small files past the first slice (read
    /// in the batch's transaction).
    private func prepareBatch<Item: Sendable>(_ batch: [Item], _ sources: [IngestSource?],
                                              failed: (Item, Error) throws -> String) throws -> PreparedBatch<Item> {
        let prepared = PreparedBatch<Item>(blobs: blobs)
        prepared.items = batch.map { ($0, .none) }
        var work: [Int] = []
        var small: [Int] = []
        for (index, source) in sources.enumerated() {
            guard let source else { continue }
            if case .file(let input) = source, let check = input.unchanged { prepared.unchanged[index] = (input.path, check) }
            if case .file(let input) = source, input.size < settings.inlineThreshold {
                small.append(index)
                prepared.items[index].1 = .deferred(input)
            } else {
                work.append(index)
            }
        }
        // The first slice of small files, in the order the transaction inserts them.
        work += Self.insertionOrder(small, prepared).prefix(Self.ingestReadSlice)
        // Two threads per core: staging writes go straight to the device (direct I/O) and wait for it,
        // and the other thread of the core hashes meanwhile.
        let outcomes = Parallel.mapLargestFirst(work.compactMap { sources[$0] }, workers: 2 * Parallel.cores,
                                                cost: { self.cost($0).size }) { try self.prepare($0) }
        for (index, outcome) in zip(work, outcomes) {
            if case .success(let blob) = outcome { prepared.items[index].1 = .prepared(blob) }
        }
        for (index, outcome) in zip(work, outcomes) {
            if case .failure(let error) = outcome { prepared.items[index].1 = .failed(try failed(batch[index], error)) }
        }
        return prepared
    }

    /// The order blob rows are inserted in: by address where it is known before reading (the blobs'
    /// index then has each page visited once), the others after, in item order.
    private static func insertionOrder<Item>(_ indexes: [Int], _ batch: PreparedBatch<Item>) -> [Int] {
        func key(_ index: Int) -> BlobID? {
            switch batch.items[index].1 {
            case .prepared(let blob): blob.id
            case .deferred(let input): input.checked?.id
            default: nil
            }
        }
        let keys = indexes.map(key)
        return indexes.indices.sorted { a, b in
            switch (keys[a], keys[b]) {
            case let (x?, y?): x != y ? x < y : a < b
            case (.some, nil): true
            case (nil, .some): false
            case (nil, nil): a < b
            }
        }.map { indexes[$0] }
    }

    /// Installs the batch's staged blobs durably, then in the open transaction `w` inserts the blob
    /// rows — reading the deferred small files slice by slice meanwhile — settles the reads that
    /// failed with the caller (`settle`), and runs `rows`; then asks the `unchanged` hook of each
    /// file read that has one, and throws `SourceChanged` (rolling the batch back) when a file is no
    /// longer as it was judged before its read. In a ledgered transaction (the ingest
    /// path's spans) `rows` only adds rows through the catalog's verbs; a single batch (`ingestOnce`:
    /// sync, attach, repair, whose rows also change and delete) keeps the row triggers.
    private func write<Item: Sendable, Out>(_ batch: PreparedBatch<Item>, _ w: CatalogWriter, settle: IngestSettle,
                                            rows: (CatalogWriter, [(Item, IngestOutcome)]) throws -> Out) throws -> Out {
        let installed = try installStaged(batch.items.compactMap { if case .prepared(let blob) = $0.1 { blob } else { nil } })
        let order = Self.insertionOrder(batch.items.indices.filter {
            switch batch.items[$0].1 { case .prepared, .deferred: true; default: false }
        }, batch)
        var failures: [(index: Int, error: Error)] = []
        /// Reads (on every core, on a thread of its own) the deferred files among `order[from...]`'s next slice.
        func startReading(from: Int) -> (ArraySlice<Int>, Parallel.Future<[Result<PreparedBlob, Error>]>)? {
            guard from < order.endIndex else { return nil }
            let slice = order[from..<min(from + Self.ingestReadSlice, order.endIndex)]
            let inputs = slice.compactMap { if case .deferred(let input) = batch.items[$0].1 { input } else { nil } }
            // One thread per core: the writer, on this thread, keeps working meanwhile.
            return (slice, Parallel.Future { Parallel.map(inputs) { try self.prepare(.file($0)) } })
        }
        var reading = startReading(from: order.startIndex)
        while let (slice, pending) = reading {
            let read = pending.wait()
            reading = startReading(from: slice.endIndex)
            var next = read.makeIterator()
            for index in slice {
                let blob: PreparedBlob
                switch batch.items[index].1 {
                case .prepared(let prepared): blob = prepared
                case .deferred:
                    switch next.next() {
                    case .success(let read)?: blob = read
                    case .failure(let error)?:
                        failures.append((index, error))
                        continue
                    case nil: continue
                    }
                default: continue
                }
                let known = try recordBlob(w, blob, installed: blob.adopted.map { ($0, true) } ?? installed[blob.id])
                // The bytes go once their row is written: at most two slices are in memory.
                batch.items[index].1 = .done(Ingested(id: blob.id, size: blob.size, mediaType: blob.mediaType,
                                                      deduplicated: known))
            }
        }
        for ((index, _), message) in zip(failures, try settle(failures)) { batch.items[index].1 = .failed(message) }
        // The caller's rows index each receipt they touch once, at the end of the transaction.
        let out = try w.holdingSearchIndex {
            try rows(w, batch.items.map { item, state in
                switch state {
                case .done(let blob): (item, .ingested(blob))
                case .failed(let message): (item, .failed(message))
                default: (item, .none)
                }
            })
        }
        // Last, so a writer that came back at any moment since the file was judged complete is seen.
        for (index, file) in batch.unchanged.sorted(by: { $0.key < $1.key }) {
            if case .done = batch.items[index].1, !file.check() { throw SourceChanged(path: file.path) }
        }
        return out
    }

    /// Installs the staged blobs of a batch (renames, one fsync per folder); nothing is referenced yet.
    func installStaged(_ blobsToInstall: [PreparedBlob]) throws -> [BlobID: (DurableBlob, deduplicated: Bool)] {
        let staged = blobsToInstall.compactMap(\.staged)
        guard !staged.isEmpty else { return [:] }
        var map: [BlobID: (DurableBlob, deduplicated: Bool)] = [:]
        for stored in try blobs.install(staged) { map[stored.id] = map[stored.id] ?? (stored.durable, stored.deduplicated) }
        return map
    }

    /// Inserts the blob's row unless present; returns whether the vault already had the blob. The
    /// only place the vault asks for a blob row.
    func recordBlob(_ w: CatalogWriter, _ blob: PreparedBlob, installed: (DurableBlob, deduplicated: Bool)?) throws -> Bool {
        if let inline = blob.inline {
            return try !w.insertBlob(inline)
        }
        // The blob file was installed before this transaction, or the catalog holds the blob already.
        guard let installed else {
            if try Catalog.hasBlob(w.db, blob.id) { return true }
            throw VaultError(.io, "blob \(blob.id) is not in the catalog nor staged; re-run the import")
        }
        let inserted = try w.insertBlob(installed.0)
        return !inserted || installed.deduplicated
    }
}
