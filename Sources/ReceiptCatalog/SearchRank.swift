import Foundation
import GRDB
import GRDBSQLite

/// `receipt_rank(receiptSearch, K, w1, …, w7)`: FTS5's own `bm25()` score (negated, so higher is
/// better), bit for bit, but only for the rows that can still be among the best K when they are
/// visited; NULL for the others (the rows scoring below K rows already seen).
///
/// Why: a common word ("sourdough") matches half of a 100,000-receipt vault, and `bm25()` looks up each
/// matching row's length in the index's `docsize` table, one nested SQLite statement per row: 60 % of
/// a search's instructions went there. A row's score only grows as its length shrinks, and a row is
/// at least as long as its hits reach into each column (FTS5 hands us their offsets anyway), so the
/// score at that length bounds it from above; once K rows scored better than that bound, the row
/// cannot be in the top K and its length is never read (445 of 70,000 rows of a two-word search).
///
/// Correctness: a row returned NULL scores strictly less than K rows already seen, so it is never among
/// the K best (rows tied with the K-th are always scored, for the caller's tie-breaks). Rounding is
/// monotone, so the bound computed in floating point is still >= the score. SQLite may evaluate the
/// function twice for a row (once in WHERE, once in the result): the last row's answer is remembered.
/// The function must be evaluated only on the rows the caller keeps (after its other filters), or K
/// would count rows the caller then drops.
enum SearchRank {
    static let name = "receipt_rank"

    /// Registers the function on one connection (each connection has its own FTS5 registry).
    static func register(_ db: Database) {
        let api = FTS5.api(db)
        guard let create = api.pointee.xCreateFunction else { return }
        _ = create(UnsafeMutablePointer(mutating: api), name, nil, { api, fts, ctx, count, args in
            guard let api, let fts, let ctx else { return }
            let rc = SearchRank.score(api, fts, ctx, Int(count), args)
            if rc != SQLITE_OK { sqlite3_result_error_code(ctx, rc) }
        }, nil)
    }

    /// One query's state, kept as the FTS5 cursor's auxiliary data. Its per-query constants and per-row
    /// scratch are fixed buffers, not arrays: the function runs for every matching row (70,000 of a
    /// two-word search at 100,000 receipts), and an array read from a class costs a retain, a release
    /// and an exclusivity check each time.
    final class State {
        /// Each phrase's inverse document frequency.
        let idf: UnsafeMutableBufferPointer<Double>
        /// Each column's bm25 weight (1.0 beyond those given).
        let weights: UnsafeMutableBufferPointer<Double>
        /// Each phrase's weighted hits in the current row.
        let freq: UnsafeMutableBufferPointer<Double>
        /// Per column, how far into it the current row's hits reach (last offset + 1).
        let reach: UnsafeMutableBufferPointer<Int32>
        var avgdl = 0.0
        var limit = 0
        /// The K best scores so far, as a min-heap (the root is the K-th best).
        var best: [Double] = []
        var lastRowid: Int64?
        var lastScore: Double?
        /// Row lengths, read in rowid order beside the match (see `RowLengths`).
        var lengths: RowLengths?

        init(phrases: Int, columns: Int, weights given: [Double]) {
            idf = .allocate(capacity: phrases)
            idf.initialize(repeating: 1e-6)
            freq = .allocate(capacity: phrases)
            freq.initialize(repeating: 0)
            weights = .allocate(capacity: columns)
            for c in 0..<columns { weights.initializeElement(at: c, to: c < given.count ? given[c] : 1.0) }
            reach = .allocate(capacity: columns)
            reach.initialize(repeating: 0)
        }

        deinit {
            idf.deallocate()
            freq.deallocate()
            weights.deallocate()
            reach.deallocate()
        }

        /// bm25 of the current row's hits (`freq`) at `length` tokens: the same operations in the same
        /// order as FTS5's, so the same double. A longer row never scores more (rounding is monotone).
        func score(length: Double) -> Double {
            var score = 0.0
            for i in 0..<idf.count {
                let f = freq[i]
                score += idf[i] * ((f * (k1 + 1.0)) / (f + k1 * (1 - b + b * length / avgdl)))
            }
            return score
        }

        /// The current row's score, or NULL when it cannot be among the K best.
        func rank(_ api: UnsafePointer<Fts5ExtensionApi>, _ fts: OpaquePointer, _ ctx: OpaquePointer) -> Int32 {
            guard let xRowid = api.pointee.xRowid, let xPhraseFirst = api.pointee.xPhraseFirst,
                  let xPhraseNext = api.pointee.xPhraseNext else { return SQLITE_ERROR }
            let rowid = xRowid(fts)
            // A row's answer, remembered for a second call on the same row: its score, or NULL.
            func reply(_ score: Double?) -> Int32 {
                lastRowid = rowid
                lastScore = score
                if let score { sqlite3_result_double(ctx, score) } else { sqlite3_result_null(ctx) }
                return SQLITE_OK
            }
            if rowid == lastRowid { return reply(lastScore) }
            // Each phrase's hits, weighted by column, in the order bm25() adds them (column, then offset),
            // so the sums are the same doubles; and how far into each column they reach.
            for c in reach.indices { reach[c] = 0 }
            for phrase in freq.indices {
                var iter = Fts5PhraseIter()
                var column: Int32 = 0, offset: Int32 = 0
                let rc = xPhraseFirst(fts, Int32(phrase), &iter, &column, &offset)
                if rc != SQLITE_OK { return rc }
                var f = 0.0
                while column >= 0 {
                    let c = Int(column)
                    if c < weights.count {
                        f += weights[c]
                        if offset >= reach[c] { reach[c] = offset + 1 }
                    } else {
                        f += 1.0
                    }
                    xPhraseNext(fts, &iter, &column, &offset)
                }
                freq[phrase] = f
            }
            // The row is at least as long as its hits reach, so it scores at most its score at that length.
            // Once K rows scored better than that, its length is never read: a common word matches most
            // rows, and reading each one's length was a third of a search's time.
            var least = 0.0
            for c in reach.indices { least += Double(reach[c]) }
            if excludes(score(length: least)) { return reply(nil) }
            let length: Double
            if let known = lengths?.tokens(of: rowid) {
                length = Double(known)
            } else {
                guard let xColumnSize = api.pointee.xColumnSize else { return SQLITE_ERROR }
                var tokens: Int32 = 0
                let rc = xColumnSize(fts, -1, &tokens)
                if rc != SQLITE_OK { return rc }
                length = Double(tokens)
            }
            let exact = score(length: length)
            // The exact score rules out as much as the bound did: a row below K rows already seen is
            // dropped here, before the caller joins and sorts it (a single common word gives every row
            // the same bound, so without this all 53,000 rows of one went on to the join and the sort).
            if excludes(exact) { return reply(nil) }
            keep(exact)
            return reply(exact)
        }

        func keep(_ score: Double) {
            guard limit > 0 else { return }
            if best.count < limit {
                best.append(score)
                var i = best.count - 1
                while i > 0, best[(i - 1) / 2] > best[i] { best.swapAt(i, (i - 1) / 2); i = (i - 1) / 2 }
            } else if score > best[0] {
                best[0] = score
                var i = 0
                while true {
                    let l = 2 * i + 1, r = l + 1
                    var m = i
                    if l < best.count, best[l] < best[m] { m = l }
                    if r < best.count, best[r] < best[m] { m = r }
                    if m == i { break }
                    best.swapAt(i, m)
                    i = m
                }
            }
        }

        /// True when a row scoring at most `bound` cannot be among the K best.
        func excludes(_ bound: Double) -> Bool { limit > 0 && best.count == limit && bound < best[0] }
    }

    private static let k1 = 1.2
    private static let b = 0.75

    private static func score(_ api: UnsafePointer<Fts5ExtensionApi>, _ fts: OpaquePointer, _ ctx: OpaquePointer,
                              _ count: Int, _ args: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
        guard let xGetAuxdata = api.pointee.xGetAuxdata else { return SQLITE_ERROR }
        if let raw = xGetAuxdata(fts, 0) {
            // Borrowed, not retained: the cursor holds the state for as long as this call runs.
            return Unmanaged<State>.fromOpaque(raw)._withUnsafeGuaranteedRef { $0.rank(api, fts, ctx) }
        }
        var rc = SQLITE_OK
        guard let state = prepare(api.pointee, fts, ctx, count, args, &rc), rc == SQLITE_OK else {
            return rc == SQLITE_OK ? SQLITE_ERROR : rc
        }
        guard let xSetAuxdata = api.pointee.xSetAuxdata else { return SQLITE_ERROR }
        rc = xSetAuxdata(fts, Unmanaged.passRetained(state).toOpaque()) { raw in
            if let raw { Unmanaged<State>.fromOpaque(raw).release() }
        }
        if rc != SQLITE_OK { return rc }
        return state.rank(api, fts, ctx)
    }

    /// The query's constants, computed as bm25() computes them: the average row length and each
    /// phrase's inverse document frequency (1e-6 for a phrase in more than half of the rows).
    private static func prepare(_ api: Fts5ExtensionApi, _ fts: OpaquePointer, _ ctx: OpaquePointer, _ count: Int,
                                _ args: UnsafeMutablePointer<OpaquePointer?>?, _ rc: inout Int32) -> State? {
        guard let xPhraseCount = api.xPhraseCount, let xColumnCount = api.xColumnCount, let xRowCount = api.xRowCount,
              let xColumnTotalSize = api.xColumnTotalSize, let xQueryPhrase = api.xQueryPhrase else {
            rc = SQLITE_ERROR
            return nil
        }
        var weights: [Double] = []
        if count > 1, let args { weights = (1..<count).map { sqlite3_value_double(args[$0]) } }
        let state = State(phrases: Int(xPhraseCount(fts)), columns: Int(xColumnCount(fts)), weights: weights)
        state.lengths = RowLengths(sqlite3_context_db_handle(ctx))
        if count > 0, let args { state.limit = Int(sqlite3_value_int64(args[0])) }
        var rows: Int64 = 0, tokens: Int64 = 0
        rc = xRowCount(fts, &rows)
        if rc == SQLITE_OK { rc = xColumnTotalSize(fts, -1, &tokens) }
        guard rc == SQLITE_OK else { return nil }
        state.avgdl = Double(tokens) / Double(rows)
        for phrase in state.idf.indices {
            // Counted only up to half of the rows: from there on the idf is 1e-6 whatever the count
            // (SQLITE_DONE ends FTS5's walk without an error). A common word's count was most of a
            // search's time before its first row.
            var count = (hits: Int64(0), half: (rows + 1) / 2)
            rc = xQueryPhrase(fts, Int32(phrase), &count) { _, _, user in
                guard let count = user?.assumingMemoryBound(to: (hits: Int64, half: Int64).self) else { return SQLITE_ERROR }
                count.pointee.hits += 1
                return count.pointee.hits >= count.pointee.half ? SQLITE_DONE : SQLITE_OK
            }
            guard rc == SQLITE_OK else { return nil }
            let hits = count.hits
            var idf = log((Double(rows) - Double(hits) + 0.5) / (Double(hits) + 0.5))
            if idf <= 0.0 { idf = 1e-6 }
            state.idf[phrase] = idf
        }
        return state
    }
}
