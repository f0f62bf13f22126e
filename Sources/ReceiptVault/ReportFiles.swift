import CSV
import Foundation

/// A report written as CSV (for a spreadsheet); the SVG chart (for a browser) is ReportChart.swift.
extension Report {
    /// Columns key, currency, count, total; a last row counts the receipts without a total.
    public func csv(by grouping: ReportGrouping) throws -> Data {
        var rows = [[grouping.rawValue, "currency", "count", "total"]]
        rows += groups.map { [$0.key ?? "", $0.currency ?? "", String($0.count), $0.total] }
        rows.append(["(without total)", "", String(withoutTotal), ""])
        return try Self.csvData(rows, what: "the report as CSV")
    }

    /// RFC 4180 rows (CSV.swift quotes them), CRLF line ends; a cell a spreadsheet would run as a
    /// formula is written as text (`SpreadsheetCell`).
    static func csvData(_ rows: [[String]], what: String) throws -> Data {
        let stream = OutputStream(toMemory: ())
        do {
            let writer = try CSVWriter(stream: stream, newline: .crlf)
            for row in rows { try writer.write(row: row.map(SpreadsheetCell.written)) }
            writer.stream.close()
        } catch {
            throw VaultError(.io, "cannot write \(what): \(error)")
        }
        guard let data = stream.property(forKey: .dataWrittenToMemoryStreamKey) as? Data else {
            throw VaultError(.io, "cannot write \(what)")
        }
        return data
    }
}
