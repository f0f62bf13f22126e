import GRDB

extension Catalog {
    /// The search index's words of `lengths` characters, with how many receipts hold each, one at a
    /// time (FTS5's `fts5vocab`, made per connection in `Catalog.configuration`).
    public static func forEachIndexedWord(_ db: Database, lengths: ClosedRange<Int>,
                                          _ body: (_ word: String, _ receipts: Int) throws -> Void) throws {
        let cursor = try Row.fetchCursor(db, sql: "SELECT term, doc FROM temp.searchVocab WHERE length(term) BETWEEN ? AND ?",
                                         arguments: [lengths.lowerBound, lengths.upperBound])
        while let row = try cursor.next() { try body(row[0], row[1]) }
    }

    /// Whether the search index holds this word.
    public static func isIndexedWord(_ db: Database, _ word: String) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT 1 FROM temp.searchVocab WHERE term = ?", arguments: [word]) ?? false
    }
}
