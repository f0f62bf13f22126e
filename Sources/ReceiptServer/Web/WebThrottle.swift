import Foundation

/// Slows down password guessing on the web sign-in (docs/PROTOCOL.md, "Web view"). Two counts:
/// each account and address pair has 3 free failures, and each address has 10 across all the
/// accounts it tries; past them, every further try of that pair (or from that address) waits twice
/// as long as the last (1 s, 2 s, 4 s ... at most 15 minutes), and a try made while waiting is
/// refused (429) without checking the password. A try counts from the moment it is admitted, before
/// its password is checked, so simultaneous tries get no more checks than tries one after another
/// (of 50 at once, 3 are checked). There is no count per account alone: nobody can lock an account
/// out from another address. A success clears its pair, never its address (signing in to an account
/// of one's own forgives no guessing). Kept in memory: a restart forgives.
actor WebThrottle {
    private struct Entry {
        var failures = 0
        /// Tries admitted and not yet decided: counted against the free failures until they are.
        var pending = 0
        var until: ContinuousClock.Instant?
    }

    private var entries: [String: Entry] = [:]
    private let clock = ContinuousClock()
    static let pairFreeFailures = 3
    static let addressFreeFailures = 10
    static let longestWait = Duration.seconds(15 * 60)
    /// Entries kept at most: past it, those with no try in flight are forgotten (memory stays
    /// bounded under a flood of addresses).
    static let maxEntries = 100_000

    private static func keys(_ account: String, _ address: String) -> [(key: String, free: Int)] {
        [("pair:\(account) \(address)", pairFreeFailures), ("address:\(address)", addressFreeFailures)]
    }

    /// nil: the try is admitted (check its password, then report `failed`, `succeeded` or
    /// `abandoned`); else the seconds to wait. Past the free failures, one try at a time is
    /// admitted, once the last one's wait is over.
    func admit(account: String, address: String) -> Int? {
        let now = clock.now
        var wait = Duration.zero
        for (key, free) in Self.keys(account, address) {
            let entry = entries[key] ?? Entry()
            if let until = entry.until, until > now {
                wait = max(wait, until - now)
            } else if entry.pending >= max(1, free - entry.failures) {
                wait = max(wait, .seconds(1))   // the tries in flight decide what comes next
            }
        }
        guard wait == .zero else { return Int(wait.components.seconds) + (wait.components.attoseconds > 0 ? 1 : 0) }
        if entries.count > Self.maxEntries { entries = entries.filter { $0.value.pending > 0 } }
        for (key, _) in Self.keys(account, address) { entries[key, default: Entry()].pending += 1 }
        return nil
    }

    /// The admitted try's password was wrong.
    func failed(account: String, address: String) {
        for (key, free) in Self.keys(account, address) {
            var entry = decided(key)
            entry.failures += 1
            let over = entry.failures - free
            if over >= 0 { entry.until = clock.now + (over >= 10 ? Self.longestWait : min(Self.longestWait, .seconds(1 << over))) }
            entries[key] = entry
        }
    }

    /// The admitted try signed in: its pair starts again; for its address it only ends the try.
    func succeeded(account: String, address: String) {
        let keys = Self.keys(account, address)
        entries[keys[0].key] = nil
        entries[keys[1].key] = decided(keys[1].key)
    }

    /// The admitted try could not be checked (the catalog failed): it counts for nothing.
    func abandoned(account: String, address: String) {
        for (key, _) in Self.keys(account, address) { entries[key] = decided(key) }
    }

    private func decided(_ key: String) -> Entry {
        var entry = entries[key] ?? Entry()
        entry.pending = max(0, entry.pending - 1)
        return entry
    }
}
