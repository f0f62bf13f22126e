import BlobStore

/// How much one import batch may gather before it is flushed and committed. Fewer, larger batches
/// mean fewer flushes (two syncfs and one SQLite commit each); the limits keep resources bounded.
struct BatchBudget {
    /// Each staged file stays open and locked until the batch is installed.
    static let stagedFilesLimit = 256
    /// Staged bytes wait in interim/ (on disk, not in memory) until the batch is installed.
    static let stagedBytesLimit: Int64 = 1 << 30
    /// Small files are held in memory until their rows commit, and the batch's rows, outcomes and
    /// report with them: 16 MiB, since two batches are in flight (one is staged while the one before
    /// it commits). At 32 MiB a manifest import of 100,000 small files peaked at 97–103 MB, at 16 MiB
    /// 79 MB, for 5–10 % more time (more, smaller transactions).
    let inlineBytesLimit: Int64
    /// Rows of one transaction.
    let rowsLimit: Int

    init(inlineBytesLimit: Int64 = 16 << 20, rowsLimit: Int = 16384) {
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

    var isFull: Bool {
        rows >= rowsLimit || staged >= Self.stagedFilesLimit || stagedBytes >= Self.stagedBytesLimit
            || inlineBytes >= inlineBytesLimit
    }
}
