import BlobStore

/// How much one import batch may gather before it is installed and written, and how many batches
/// one transaction spans. Fewer, larger batches and spans mean fewer flushes (a syncfs per batch,
/// a SQLite commit per span); the limits keep resources bounded.
struct BatchBudget {
    /// Each staged file stays open and locked until the batch is installed.
    static let stagedFilesLimit = 256
    /// Staged bytes wait in interim/ (on disk, not in memory) until the batch is installed.
    static let stagedBytesLimit: Int64 = 1 << 30
    /// Small files of a batch: its items, outcomes and report are in memory while it is prepared and
    /// written (its files themselves 1,024 at a time), and two batches are in flight (one prepared
    /// while the one before is written). At 32 MiB a manifest import of 100,000 small files peaked at
    /// 97–103 MB, at 16 MiB 79 MB, for 5–10 % more time.
    let inlineBytesLimit: Int64
    /// Items of one batch.
    let rowsLimit: Int
    /// Consecutive batches share one transaction (`IngestSpan`) until it holds this many items or
    /// bytes: a commit per 16 MiB batch (~7,000 small files) rewrote and checkpointed most pages of
    /// the randomly keyed indexes each time (at a million receipts: 182 s, against 150 s in spans of
    /// 16,384 items and 142 s in spans of 32,768; docs/BENCHMARKS.md). Memory holds a report line and
    /// the books per item of the open span until it commits (~500–750 bytes each, measured: 77, 93 and
    /// 101 MB at a million), not the items; a batch of large files (1 GiB) commits alone.
    let spanItemsLimit: Int
    let spanBytesLimit: Int64

    init(inlineBytesLimit: Int64 = 16 << 20, rowsLimit: Int = 16384, spanItemsLimit: Int = 16_384,
         spanBytesLimit: Int64 = 256 << 20) {
        self.spanItemsLimit = spanItemsLimit
        self.spanBytesLimit = spanBytesLimit
        self.rowsLimit = rowsLimit
        self.inlineBytesLimit = inlineBytesLimit
    }

    private var rows = 0
    private var staged = 0
    private var stagedBytes: Int64 = 0
    private var inlineBytes: Int64 = 0

    mutating func add(size: Int64, inline: Bool) {
        rows += 1
        if inline {
            inlineBytes += size
        } else {
            staged += 1
            stagedBytes += size
        }
    }

    /// Bytes the batch's sources bring (small and staged).
    var bytes: Int64 { inlineBytes + stagedBytes }

    var isFull: Bool {
        rows >= rowsLimit || staged >= Self.stagedFilesLimit || stagedBytes >= Self.stagedBytesLimit
            || inlineBytes >= inlineBytesLimit
    }
}
