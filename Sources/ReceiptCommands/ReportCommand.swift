import ArgumentParser
import Foundation
import ReceiptCatalog
import ReceiptVault

struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Count and total receipts per group and currency, summed exactly.",
        discussion: """
            Totals are summed as exact decimals (0.10 + 0.20 is 0.30), one group per key and currency; \
            receipts without a total are counted apart. --csv writes the table for a spreadsheet, \
            --chart an SVG bar chart a browser shows.
            --json: {"groups": [{"key", "currency", "count", "total"}], "withoutTotal": N}, total a decimal string.
            Example: receipt report --from 2025-01-01 --to 2025-12-31 --by month --chart 2025.svg
            """)

    @OptionGroup var options: VaultOptions
    @OptionGroup var scope: ScopeOptions
    @Option(help: ArgumentHelp("Group by.", valueName: "category|merchant|month|year|status")) var by = "category"
    @Option(help: ArgumentHelp("Also write the table as CSV.", valueName: "file.csv")) var csv: String?
    @Option(help: ArgumentHelp("Also write an SVG bar chart.", valueName: "file.svg")) var chart: String?

    func run() throws {
        guard let grouping = ReportGrouping(rawValue: by) else {
            throw VaultError(.badInput, "invalid --by '\(by)': expected one of "
                + ReportGrouping.allCases.map(\.rawValue).joined(separator: ", "))
        }
        let vault = try options.openVaultForReading()
        let report = try vault.report(scope: scope.scope,
                                      by: grouping)
        if let csv { try write(try report.csv(by: grouping), to: csv) }
        if let chart { try write(try report.svg(title: "Receipts by \(grouping.rawValue)"), to: chart) }
        if options.json { return try Output.json(report) }
        for g in report.groups {
            Output.line([(g.key ?? "(none)"), g.currency ?? "-", String(g.count), g.total]
                .map { $0.replacingOccurrences(of: "\n", with: " ") }.joined(separator: "  "))
        }
        Output.line("without a total: \(report.withoutTotal)")
    }

    func write(_ data: Data, to path: String) throws {
        do {
            try data.write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw VaultError(.io, "cannot write \(path): \(error.localizedDescription)")
        }
    }
}
