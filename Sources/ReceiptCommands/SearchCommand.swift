import ArgumentParser
import ReceiptCatalog
import ReceiptVault

struct SearchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "search",
        abstract: "Find receipts by words of their metadata, file names and text.",
        discussion: """
            Searches merchant, category, note, tags, claim reference, file names and the text extracted \
            from attachments (see `receipt index`). Every word must match; case and diacritics are \
            folded (cafe finds Café); phar* matches words starting so; "a phrase" matches those words \
            in that order; an amount such as 23.45 also matches receipts whose total is that amount, \
            written with or without a currency mark ($16.85, CHF 18.00, €11,30) and negative ones \
            (`receipt search -- -19.99`); a time such as 14:32 matches only a time, not the amount \
            14.32. Best match first. Exit 0 also when nothing matches; stderr then may name indexed \
            words near the query's (did you mean: …).
            --json: the `list` shape plus "score", "snippet" and "matches": [{"sha256", "snippet"}] \
            (the attachments whose text matched).
            Example: receipt search 'amoxicillin 23.95' --from 2025-01-01 --status submitted
            """)

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("Words, prefix*, \"a phrase\", amounts.", valueName: "query")) var query: [String]
    @OptionGroup var scope: ScopeOptions
    @Option(help: "At most this many results.") var limit = 20

    func run() throws {
        let vault = try options.openVaultForReading()
        let results = try vault.search(query.joined(separator: " "),
                                       scope: scope.scope,
                                       limit: limit)
        if results.isEmpty {
            let nearby = vault.nearbyWords(query.joined(separator: " "))
            if !nearby.isEmpty { Output.note("did you mean: " + nearby.joined(separator: ", ")) }
        }
        if options.json { return try Output.json(results) }
        for r in results {
            Output.line(summary(r.receipt))
            Output.line("          " + (r.matches.first?.snippet ?? r.snippet).replacingOccurrences(of: "\n", with: " "))
        }
    }
}
