import Foundation

/// Runs independent pieces of blocking work (hashing, compressing, copying different files) on
/// several threads. The CPU's SHA unit is per core, so two files hashed at once go twice as fast
/// where one stream split in two would not.
public enum Parallel {
    public static var cores: Int { max(1, ProcessInfo.processInfo.activeProcessorCount) }

    /// `map`, starting with the costliest items so that no core sits idle behind one large file at the
    /// end; results still in input order.
    public static func mapLargestFirst<T: Sendable, R: Sendable>(_ items: [T], workers: Int = cores, cost: (T) -> Int64,
                                                                  _ body: @escaping @Sendable (T) throws -> R) -> [Result<R, Error>] {
        let order = items.indices.sorted { cost(items[$0]) > cost(items[$1]) }
        let results = map(order.map { items[$0] }, workers: workers, body)
        var inInputOrder = results
        for (position, index) in order.enumerated() { inInputOrder[index] = results[position] }
        return inInputOrder
    }

    /// `body` applied to every item, results in input order. The calling thread works too.
    public static func map<T: Sendable, R: Sendable>(_ items: [T], workers: Int = cores,
                                                     _ body: @escaping @Sendable (T) throws -> R) -> [Result<R, Error>] {
        let helpers = min(workers, items.count) - 1
        if helpers <= 0 { return items.map { item in Result { try body(item) } } }
        let state = WorkState<R>(count: items.count)
        let work: @Sendable () -> Void = {
            while let i = state.claim() {
                let result = Result { try body(items[i]) }
                state.store(result, at: i)
            }
        }
        for _ in 0..<helpers {
            let thread = Thread {
                work()
                state.finishWorker()
            }
            thread.start()
        }
        work()
        state.waitForWorkers(helpers)
        return state.results.map { $0 ?? .failure(CancellationError()) }
    }
}

extension Parallel {
    /// Values made one at a time, in index order, on a thread of its own, at most `limit` ahead of
    /// those taken. Every index must be taken exactly once, by takers that claim indexes in rising
    /// order and each wait for one at a time (as `map`'s workers do): a taker waiting for an index
    /// `limit` or more past the first one not yet taken would wait for ever, and so would the maker
    /// for an index never taken.
    public final class Ahead<T: Sendable>: @unchecked Sendable {
        private let condition = NSCondition()
        private var made: [Int: T] = [:]

        public init(count: Int, limit: Int, _ make: @escaping @Sendable (Int) -> T) {
            precondition(count >= 0 && limit > 0, "Ahead needs a count of at least 0 and a limit of at least 1")
            Thread { [self] in
                for index in 0..<count {
                    condition.lock()
                    while made.count >= limit { condition.wait() }
                    condition.unlock()
                    let value = make(index)
                    condition.lock()
                    made[index] = value
                    condition.broadcast()
                    condition.unlock()
                }
            }.start()
        }

        /// The value for `index`, once made.
        public func take(_ index: Int) -> T {
            condition.lock()
            defer { condition.unlock() }
            while true {
                if let value = made.removeValue(forKey: index) {
                    condition.broadcast()
                    return value
                }
                condition.wait()
            }
        }
    }
}

private final class WorkState<R>: @unchecked Sendable {
    private let condition = NSCondition()
    private var nextIndex = 0
    private var finished = 0
    private let count: Int
    var results: [Result<R, Error>?]

    init(count: Int) {
        self.count = count
        results = Array(repeating: nil, count: count)
    }

    func claim() -> Int? {
        condition.lock()
        defer { condition.unlock() }
        guard nextIndex < count else { return nil }
        nextIndex += 1
        return nextIndex - 1
    }

    func store(_ result: Result<R, Error>, at index: Int) {
        condition.lock()
        results[index] = result
        condition.unlock()
    }

    func finishWorker() {
        condition.lock()
        finished += 1
        condition.signal()
        condition.unlock()
    }

    func waitForWorkers(_ n: Int) {
        condition.lock()
        while finished < n { condition.wait() }
        condition.unlock()
    }
}

extension Parallel {
    /// One value handed from one thread to another: the first `put` wins, `wait` waits for it. Made
    /// with a body, the value is computed on a thread of its own while the caller goes on.
    public final class Future<T: Sendable>: @unchecked Sendable {
        private let condition = NSCondition()
        private var value: T?

        public init() {}

        public convenience init(_ body: @escaping @Sendable () -> T) {
            self.init()
            Thread { [self] in put(body()) }.start()
        }

        public func put(_ value: T) {
            condition.lock()
            if self.value == nil { self.value = value }
            condition.broadcast()
            condition.unlock()
        }

        public func wait() -> T {
            condition.lock()
            defer { condition.unlock() }
            while true {
                if let value { return value }
                condition.wait()
            }
        }
    }
}

extension Parallel {
    /// Runs blocking work (file reads, hashing) on a thread of its own and waits for it without
    /// holding one of Swift's cooperative threads, which are not meant to block.
    static func offPool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: body()) }.start()
        }
    }
}
