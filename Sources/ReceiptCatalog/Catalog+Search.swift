import BlobStore
import GRDB

/// Which receipts a search, a report or a list considers.
public struct ReceiptScope: Sendable, Equatable {
    public var zone: String?
    public var from: String?
    public var to: String?
    public var merchant: String?
    public var category: String?
    public var status: String?

    public init(zone: String? = nil, from: String? = nil, to: String? = nil, merchant: String? = nil,
                category: String? = nil, status: String? = nil) {
        self.zone = zone
        self.from = from
        self.to = to
        self.merchant = merchant
        self.category = category
        self.status = status
    }

    /// SQL conditions on the receipts table aliased `r` (joined by AND; "1" when none) and their arguments.
    public func sql() -> (String, StatementArguments) {
        var clauses: [String] = []
        var args: [any DatabaseValueConvertible] = []
        if let zone { clauses.append("r.zone = ?"); args.append(zone) }
        if let from { clauses.append("r.date >= ?"); args.append(from) }
        if let to { clauses.append("r.date <= ?"); args.append(to) }
        if let merchant { clauses.append("r.merchant = ? COLLATE NOCASE"); args.append(merchant) }
        if let category { clauses.append("r.category = ? COLLATE NOCASE"); args.append(category) }
        if let status { clauses.append("r.status = ?"); args.append(status) }
        return (clauses.isEmpty ? "1" : clauses.joined(separator: " AND "), StatementArguments(args))
    }
}

/// One receipt a search found.
public struct SearchHit: Sendable, Equatable {
    public var receiptID: ReceiptID
    /// Higher is better.
    public var score: Double
    /// A few words around the best match, the matched words in [brackets].
    public var snippet: String
}

extension Catalog {
    /// bm25() weights of the index's columns: merchant, category, note, tags, claim, files, body.
    static let weights = "5.0, 2.0, 1.0, 2.0, 2.0, 1.5, 1.0"

    /// Receipts in `scope` whose index row matches the FTS5 expression `match`, best first. Column
    /// weights: a word in the merchant counts most, then category, tags and claim, then the rest.
    public static func search(_ db: Database, match: String, scope: ReceiptScope, limit: Int) throws -> [SearchHit] {
        let (filter, args) = scope.sql()
        // `receipt_rank` is bm25() that skips the rows which cannot reach the top `limit` (NULL; see
        // SearchRank). Scores first, snippets only for the rows kept: SQLite would compute a snippet
        // for every match before sorting, and a common word matches half the vault.
        let rank = "\(SearchRank.name)(receiptSearch, ?, \(weights))"
        let rows: [Row]
        if scope == ReceiptScope() {
            // No filter: rank in the index alone and read the receipts row of the survivors only.
            rows = try Row.fetchAll(db, sql: """
                SELECT s.rowid AS rid, r.id, s.score FROM
                    (SELECT rowid, \(rank) AS score FROM receiptSearch WHERE receiptSearch MATCH ?) s
                JOIN receipts r ON r.rowid = s.rowid
                WHERE s.score IS NOT NULL
                ORDER BY s.score DESC, r.date DESC, r.id LIMIT ?
                """, arguments: [limit, match, limit])
        } else {
            // A filter: ranked in the result columns, which SQLite computes only for the rows that
            // passed it, so the top `limit` are counted among those.
            var arguments: StatementArguments = [limit, match]
            arguments += args
            arguments += [limit]
            rows = try Row.fetchAll(db, sql: """
                SELECT r.rowid AS rid, r.id, \(rank) AS score
                FROM receiptSearch JOIN receipts r ON r.rowid = receiptSearch.rowid
                WHERE receiptSearch MATCH ? AND \(filter)
                ORDER BY score DESC, r.date DESC, r.id LIMIT ?
                """, arguments: arguments)
        }
        guard !rows.isEmpty else { return [] }
        var snippets: [Int64: String] = [:]
        let snippetRows = try Row.fetchAll(db, sql: """
            SELECT rowid, snippet(receiptSearch, -1, '[', ']', '…', 12) FROM receiptSearch
            WHERE receiptSearch MATCH ? AND rowid IN (\(placeholders(rows.count)))
            """, arguments: [match] + StatementArguments(rows.map { $0["rid"] as Int64 }))
        for row in snippetRows {
            snippets[row[0]] = (row[1] as String? ?? "").split(whereSeparator: \.isNewline).joined(separator: " ")
        }
        return try rows.map { SearchHit(receiptID: try $0.decode(forColumn: "id"), score: $0["score"], snippet: snippets[$0["rid"]] ?? "") }
    }

    /// Receipts in `scope` whose total is one of `totals` (exact strings) and, when `match` is given,
    /// whose index row matches it too; the score is the match's.
    public static func searchTotals(_ db: Database, totals: [String], match: String?, scope: ReceiptScope,
                                    limit: Int) throws -> [SearchHit] {
        guard !totals.isEmpty else { return [] }
        let (filter, args) = scope.sql()
        var arguments = StatementArguments(totals)
        arguments += args
        var textCondition = ""
        var scoreSQL = "0.0"
        var from = "receipts r"
        if let match {
            from = "receiptSearch JOIN receipts r ON r.rowid = receiptSearch.rowid"
            textCondition = "AND receiptSearch MATCH ?"
            scoreSQL = "-bm25(receiptSearch, \(weights))"
            arguments += [match]
        }
        arguments += [limit]
        let rows = try Row.fetchAll(db, sql: """
            SELECT r.id, \(scoreSQL) AS score, r.total, r.currency FROM \(from)
            WHERE r.total IN (\(placeholders(totals.count))) AND \(filter) \(textCondition)
            ORDER BY score DESC, r.date DESC, r.id LIMIT ?
            """, arguments: arguments)
        return try rows.map { row in
            let amount = [row["total"] as String?, row["currency"] as String?].compactMap { $0 }.joined(separator: " ")
            return SearchHit(receiptID: try row.decode(forColumn: "id"), score: row["score"], snippet: "total [\(amount)]")
        }
    }

    /// Problems of the search index: FTS5's own check of its structure, and receipts with no row or
    /// rows with no receipt. Empty when it is sound.
    public func searchIndexProblems(integrityCheck: Bool = true) throws -> [String] {
        var problems: [String] = []
        // FTS5's check is written as an INSERT, so it needs the writer (it changes nothing). On a
        // read-only vault it cannot run; the row counts below still do.
        if integrityCheck { do {
            try write { db in
                try db.execute(sql: "INSERT INTO receiptSearch(receiptSearch, rank) VALUES ('integrity-check', 1)")
            }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CORRUPT {
            problems.append("the search index is damaged (\(error.message ?? "\(error.resultCode)"))")
        } catch let error as DatabaseError where error.resultCode == .SQLITE_READONLY || error.resultCode == .SQLITE_CANTOPEN
                                              || error.resultCode == .SQLITE_PERM {
            _ = error
        } }
        try read { db in
            // By the index's `docsize` table (one row per indexed receipt, written with it; FTS5's own
            // check above, not --quick, holds it to the index) and by counting: rows whose receipt
            // exists, subtracted from the receipts, are the receipts without one. Looking each
            // receipt up through the FTS5 table cost a cursor per receipt, and a scan of the receipts
            // table a read of all its rows: 2.7 s, then 1.6 s of `fsck --quick` at a million.
            let receipts = try Int.fetchOne(db, sql: "SELECT count(*) FROM receipts") ?? 0
            let indexed = try Int.fetchOne(db, sql: "SELECT count(*) FROM receiptSearch_docsize") ?? 0
            let stray = try Int.fetchOne(db, sql: """
                SELECT count(*) FROM receiptSearch_docsize d WHERE NOT EXISTS (SELECT 1 FROM receipts r WHERE r.rowid = d.id)
                """) ?? 0
            let missing = receipts - (indexed - stray)
            if missing > 0 { problems.append("\(missing) receipts are missing from the search index") }
            if stray > 0 { problems.append("the search index holds \(stray) rows of receipts that do not exist") }
        }
        return problems
    }

    /// Builds the search index again from the catalog and the stored texts.
    public func rebuildSearchIndex() throws {
        try write { db in try SearchIndex.rebuild(db) }
    }
}
