import ReceiptExportLayout
import Foundation

/// A report written as CSV (for a spreadsheet); the SVG chart (for a browser) is ReportChart.swift.
extension Report {
    /// Columns key, currency, count, total; a last row counts the receipts without a total.
    public func csv(by grouping: ReportGrouping) throws -> Data {
        var rows = [[grouping.rawValue, "currency", "count", "total"]]
        rows += groups.map { [$0.key ?? "", $0.currency ?? "", String($0.count), $0.total] }
        rows.append(["(without total)", "", String(withoutTotal), ""])
        do {
            return try SpreadsheetCell.csvData(rows, what: "the report as CSV")
        } catch {
            throw VaultError.wrap(error)
        }
    }
}
