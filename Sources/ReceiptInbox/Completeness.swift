/// Decides when a file under the inbox is complete: its writer closed it (an inotify
/// IN_CLOSE_WRITE, where the kernel gives one) and it has not changed since, or its signature has
/// stayed the same for at least one polling interval. The second rule needs nothing from the file
/// system, so it also works on network file systems where inotify is silent.
struct Completeness {
    let interval: Duration
    /// The signature each file had when first seen unchanged, and since when.
    private var seen: [String: (signature: FileSignature, since: ContinuousClock.Instant)] = [:]
    /// Signatures of files whose writer closed them, as they were just after the close.
    private var closed: [String: FileSignature] = [:]

    init(interval: Duration) {
        self.interval = interval
    }

    /// A writer closed `path`; `signature` is what the file looked like right after.
    mutating func noteClosed(_ path: String, _ signature: FileSignature) {
        closed[path] = signature
    }

    /// Judges the files of one poll: returns those complete now, in the order given. Files no longer
    /// present are forgotten.
    mutating func complete(_ entries: [InboxEntry], now: ContinuousClock.Instant) -> [InboxEntry] {
        var ready: [InboxEntry] = []
        var next: [String: (signature: FileSignature, since: ContinuousClock.Instant)] = [:]
        for entry in entries {
            // An empty file's close proves nothing: writers often create the file first, close it,
            // and open it again to write. Polling judges those.
            if entry.signature.size > 0, closed[entry.path] == entry.signature {
                ready.append(entry)
            } else if let before = seen[entry.path], before.signature == entry.signature {
                if now - before.since >= interval { ready.append(entry) } else { next[entry.path] = before }
            } else {
                next[entry.path] = (entry.signature, now)
            }
        }
        seen = next
        closed = [:]
        return ready
    }

    /// How many files are waiting to be judged complete.
    var waiting: Int { seen.count }

    /// When the earliest waiting file can next be judged complete.
    var nextDecision: ContinuousClock.Instant? { seen.values.map { $0.since + interval }.min() }
}
