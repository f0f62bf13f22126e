import CSV
import Foundation
import Mustache

/// A report written as CSV (for a spreadsheet) and as an SVG bar chart (for a browser).
extension Report {
    /// Columns key, currency, count, total; a last row counts the receipts without a total.
    public func csv(by grouping: ReportGrouping) throws -> Data {
        var rows = [[grouping.rawValue, "currency", "count", "total"]]
        rows += groups.map { [$0.key ?? "", $0.currency ?? "", String($0.count), $0.total] }
        rows.append(["(without total)", "", String(withoutTotal), ""])
        return try Self.csvData(rows, what: "the report as CSV")
    }

    /// RFC 4180 rows (CSV.swift quotes them), CRLF line ends.
    static func csvData(_ rows: [[String]], what: String) throws -> Data {
        let stream = OutputStream(toMemory: ())
        do {
            let writer = try CSVWriter(stream: stream, newline: .crlf)
            for row in rows { try writer.write(row: row) }
            writer.stream.close()
        } catch {
            throw VaultError(.io, "cannot write \(what): \(error)")
        }
        guard let data = stream.property(forKey: .dataWrittenToMemoryStreamKey) as? Data else {
            throw VaultError(.io, "cannot write \(what)")
        }
        return data
    }

    /// One horizontal bar per group, its length the group's total relative to the largest of the
    /// same currency (amounts of different currencies are not comparable), labelled with the exact total.
    /// Written from a Mustache template, whose `{{…}}` escape what XML needs escaped (FoundationXML's
    /// XMLElement did it before, and brought libxml2 and ICU into the start of every command).
    public func svg(title: String) throws -> Data {
        let barHeight = 22, gap = 8, labelWidth = 260, barWidth = 420, top = 40
        let height = top + max(groups.count, 1) * (barHeight + gap) + 20
        let width = labelWidth + barWidth + 180
        var largest: [String: Double] = [:]
        for g in groups {
            // Only the bar's length (pixels) is computed in floating point; the labels are the exact sums.
            let value = abs(Double(g.total) ?? 0)
            largest[g.currency ?? "", default: 0] = max(largest[g.currency ?? ""] ?? 0, value)
        }
        let bars: [[String: Any]] = groups.enumerated().map { i, g in
            let y = top + i * (barHeight + gap)
            let peak = largest[g.currency ?? ""] ?? 0
            let length = peak > 0 ? max(1, Int((abs(Double(g.total) ?? 0) / peak * Double(barWidth)).rounded())) : 1
            return ["y": y, "textY": y + 16, "length": length, "amountX": labelWidth + length + 6,
                    "label": Self.xmlText((g.key ?? "(none)") + (g.currency.map { " · " + $0 } ?? "")),
                    "amount": Self.xmlText("\(g.total) \(g.currency ?? "")  (\(g.count))")]
        }
        let context: [String: Any] = ["width": width, "height": height, "title": Self.xmlText(title), "bars": bars,
                                      "labelX": labelWidth - 8, "barX": labelWidth, "barHeight": barHeight]
        do {
            return Data(try MustacheTemplate(string: Self.chartTemplate).render(context).utf8)
        } catch {
            throw VaultError(.io, "cannot write the chart: \(error)")
        }
    }

    static let chartTemplate = """
        <?xml version="1.0" encoding="UTF-8"?>
        <svg xmlns="http://www.w3.org/2000/svg" width="{{width}}" height="{{height}}" viewBox="0 0 {{width}} {{height}}" \
        font-family="sans-serif" font-size="13">
        <text x="10" y="24" text-anchor="start" font-weight="bold">{{title}}</text>
        {{#bars}}
        <text x="{{labelX}}" y="{{textY}}" text-anchor="end" font-weight="normal">{{label}}</text>
        <rect x="{{barX}}" y="{{y}}" width="{{length}}" height="{{barHeight}}" fill="#4a7fb5"/>
        <text x="{{amountX}}" y="{{textY}}" text-anchor="start" font-weight="normal">{{amount}}</text>
        {{/bars}}
        </svg>

        """

    /// `text` with the characters XML 1.0 cannot hold at all (controls but tab and line ends) replaced.
    static func xmlText(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { scalar in
            scalar.value < 0x20 && scalar != "\t" && scalar != "\n" && scalar != "\r" ? "\u{FFFD}" : scalar
        }))
    }
}
