import Foundation

/// Slows down guessing: after 3 failed sign-ins for an account, or from an address, each further
/// attempt for it must wait twice as long as the last (1 s, 2 s, 4 s ... at most 15 minutes); an
/// attempt made while waiting is refused (429) without checking the password. A successful sign-in
/// clears the account's count. Kept in memory: a restart forgives, which costs an attacker a restart.
actor WebThrottle {
    private struct Entry {
        var failures = 0
        var until: ContinuousClock.Instant?
    }

    private var entries: [String: Entry] = [:]
    private let clock = ContinuousClock()
    static let freeFailures = 3
    static let longestWait = Duration.seconds(15 * 60)

    /// Seconds to wait before `keys` may try again; 0 when they may try now.
    func wait(for keys: [String]) -> Int {
        let now = clock.now
        var longest = Duration.zero
        for key in keys {
            if let until = entries[key]?.until, until > now { longest = max(longest, until - now) }
        }
        return longest == .zero ? 0 : Int(longest.components.seconds) + 1
    }

    func failed(_ keys: [String]) {
        if entries.count > 100_000 { entries.removeAll() }   // memory stays bounded under a flood of addresses
        for key in keys {
            var entry = entries[key] ?? Entry()
            entry.failures += 1
            let over = entry.failures - Self.freeFailures
            if over > 0 {
                let wait = over > 10 ? Self.longestWait : min(Self.longestWait, .seconds(1 << (over - 1)))
                entry.until = clock.now + wait
            }
            entries[key] = entry
        }
    }

    func succeeded(_ keys: [String]) {
        for key in keys { entries[key] = nil }
    }
}
