import Foundation
import GRDB
import GRDBSQLite

/// `receipt_rank(receiptSearch, K, w1, …, w7)`: FTS5's own `bm25()` score (negated, so higher is
/// better), bit for bit, but only for the rows that can still be among the best K when they are
/// visited; NULL for the others (the rows scoring below K rows already seen).
///
/// Why: a common word ("sourdough") matches half of a 100,000-receipt vault, and `bm25()` looks up each
/// matching row's length in the index's `docsize` table, one nested SQLite statement per row: 60 % of
/// a search's instructions went there. A row's score only grows as its length shrinks, so the score
/// it would have at length 0 bounds it from above; once K rows scored better than that bound, the
/// row cannot be in the top K and its length is never read.
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
            let rc = SearchRank.score(api.pointee, fts, ctx, Int(count), args)
            if rc != SQLITE_OK { sqlite3_result_error_code(ctx, rc) }
        }, nil)
    }

    /// One query's state, kept as the FTS5 cursor's auxiliary data.
    final class State {
        var idf: [Double] = []
        var avgdl = 0.0
        var weights: [Double] = []
        var limit = 0
        /// Each phrase's weighted hits in the current row.
        var freq: [Double] = []
        /// The K best scores so far, as a min-heap (the root is the K-th best).
        var best: [Double] = []
        var lastRowid: Int64?
        var lastScore: Double?
        /// Row lengths, read in rowid order beside the match (see `RowLengths`).
        var lengths: RowLengths?

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

    private static func score(_ api: Fts5ExtensionApi, _ fts: OpaquePointer, _ ctx: OpaquePointer, _ count: Int,
                              _ args: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
        guard let xGetAuxdata = api.xGetAuxdata, let xSetAuxdata = api.xSetAuxdata, let xRowid = api.xRowid,
              let xPhraseFirst = api.xPhraseFirst, let xPhraseNext = api.xPhraseNext,
              let xColumnSize = api.xColumnSize else { return SQLITE_ERROR }
        let state: State
        if let raw = xGetAuxdata(fts, 0) {
            state = Unmanaged<State>.fromOpaque(raw).takeUnretainedValue()
        } else {
            var rc = SQLITE_OK
            state = prepare(api, fts, ctx, count, args, &rc)
            if rc != SQLITE_OK { return rc }
            rc = xSetAuxdata(fts, Unmanaged.passRetained(state).toOpaque()) { raw in
                if let raw { Unmanaged<State>.fromOpaque(raw).release() }
            }
            if rc != SQLITE_OK { return rc }
        }
        let rowid = xRowid(fts)
        // A row's answer, remembered for a second call on the same row: its score, or NULL.
        func reply(_ score: Double?) -> Int32 {
            state.lastScore = score
            if let score { sqlite3_result_double(ctx, score) } else { sqlite3_result_null(ctx) }
            return SQLITE_OK
        }
        if rowid == state.lastRowid { return reply(state.lastScore) }
        // Each phrase's hits, weighted by column, in the order bm25() adds them (column, then offset),
        // so the sums are the same doubles. Kept in the state's buffer, not a new array: this runs for
        // every matching row.
        let idf = state.idf, weights = state.weights
        let phrases = idf.count
        if state.freq.count != phrases { state.freq = [Double](repeating: 0, count: phrases) }
        var bound = 0.0
        for phrase in 0..<phrases {
            var iter = Fts5PhraseIter()
            var column: Int32 = 0, offset: Int32 = 0
            let rc = xPhraseFirst(fts, Int32(phrase), &iter, &column, &offset)
            if rc != SQLITE_OK { return rc }
            var f = 0.0
            while column >= 0 {
                f += Int(column) < weights.count ? weights[Int(column)] : 1.0
                xPhraseNext(fts, &iter, &column, &offset)
            }
            state.freq[phrase] = f
            bound += idf[phrase] * ((f * (k1 + 1.0)) / (f + k1 * (1 - b)))
        }
        state.lastRowid = rowid
        if state.excludes(bound) { return reply(nil) }
        let length: Double
        if let known = state.lengths?.tokens(of: rowid) {
            length = Double(known)
        } else {
            var tokens: Int32 = 0
            let rc = xColumnSize(fts, -1, &tokens)
            if rc != SQLITE_OK { state.lastRowid = nil; return rc }
            length = Double(tokens)
        }
        var score = 0.0
        let avgdl = state.avgdl
        for i in 0..<phrases {
            let f = state.freq[i]
            score += idf[i] * ((f * (k1 + 1.0)) / (f + k1 * (1 - b + b * length / avgdl)))
        }
        // The exact score rules out as much as the bound did: a row below K rows already seen is
        // dropped here, before the caller joins and sorts it (a single common word gives every row the
        // same bound, so without this all 53,000 rows of one went on to the join and the sort).
        if state.excludes(score) { return reply(nil) }
        state.keep(score)
        return reply(score)
    }

    /// The query's constants, computed as bm25() computes them: the average row length and each
    /// phrase's inverse document frequency (1e-6 for a phrase in more than half of the rows).
    private static func prepare(_ api: Fts5ExtensionApi, _ fts: OpaquePointer, _ ctx: OpaquePointer, _ count: Int,
                                _ args: UnsafeMutablePointer<OpaquePointer?>?, _ rc: inout Int32) -> State {
        let state = State()
        state.lengths = RowLengths(sqlite3_context_db_handle(ctx))
        if count > 0, let args { state.limit = Int(sqlite3_value_int64(args[0])) }
        if count > 1, let args { state.weights = (1..<count).map { sqlite3_value_double(args[$0]) } }
        guard let xPhraseCount = api.xPhraseCount, let xRowCount = api.xRowCount,
              let xColumnTotalSize = api.xColumnTotalSize, let xQueryPhrase = api.xQueryPhrase else {
            rc = SQLITE_ERROR
            return state
        }
        var rows: Int64 = 0, tokens: Int64 = 0
        rc = xRowCount(fts, &rows)
        if rc == SQLITE_OK { rc = xColumnTotalSize(fts, -1, &tokens) }
        guard rc == SQLITE_OK else { return state }
        state.avgdl = Double(tokens) / Double(rows)
        for phrase in 0..<Int(xPhraseCount(fts)) {
            var hits: Int64 = 0
            rc = xQueryPhrase(fts, Int32(phrase), &hits) { _, _, user in
                user?.assumingMemoryBound(to: Int64.self).pointee += 1
                return SQLITE_OK
            }
            guard rc == SQLITE_OK else { return state }
            var idf = log((Double(rows) - Double(hits) + 0.5) / (Double(hits) + 0.5))
            if idf <= 0.0 { idf = 1e-6 }
            state.idf.append(idf)
        }
        return state
    }
}
