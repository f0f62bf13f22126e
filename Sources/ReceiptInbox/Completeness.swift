/// Decides when a file under the inbox has settled: its signature (size, mtime, ctime, inode) was
/// the same at every poll for at least `settle`. A settled file is complete once no process holds it
/// open for writing (`OpenWriters`, asked by the inbox of settled files only). A close after writing
/// proves nothing alone: a writer may append in pieces, closing after each. Polls measure it, so it
/// needs nothing from the file system and works on network file systems too; inotify only wakes the
/// poll early (`CloseEvents`).
struct Completeness {
    let settle: Duration
    /// The signature each file had when first seen unchanged, and since when.
    private var seen: [String: (signature: FileSignature, since: ContinuousClock.Instant)] = [:]

    init(settle: Duration) {
        self.settle = settle
    }

    /// Judges the files of one poll: returns those settled now, in the order given. Files no longer
    /// present are forgotten.
    mutating func settled(_ entries: [InboxEntry], now: ContinuousClock.Instant) -> [InboxEntry] {
        var ready: [InboxEntry] = []
        var next: [String: (signature: FileSignature, since: ContinuousClock.Instant)] = [:]
        for entry in entries {
            let before = seen[entry.path]
            let since = before?.signature == entry.signature ? before?.since ?? now : now
            next[entry.path] = (entry.signature, since)
            if now - since >= settle { ready.append(entry) }
        }
        seen = next
        return ready
    }

    /// When the earliest file still settling will have settled.
    func nextSettled(after now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        seen.values.map { $0.since + settle }.filter { $0 > now }.min()
    }
}
