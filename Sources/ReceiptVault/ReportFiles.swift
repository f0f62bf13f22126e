import CSV
import Foundation
import FoundationXML

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
    public func svg(title: String) -> Data {
        let barHeight = 22, gap = 8, labelWidth = 260, barWidth = 420, top = 40
        let height = top + max(groups.count, 1) * (barHeight + gap) + 20
        let width = labelWidth + barWidth + 180
        var largest: [String: Double] = [:]
        for g in groups {
            // Only the bar's length (pixels) is computed in floating point; the labels are the exact sums.
            let value = abs(Double(g.total) ?? 0)
            largest[g.currency ?? "", default: 0] = max(largest[g.currency ?? ""] ?? 0, value)
        }
        func attr(_ element: XMLElement, _ name: String, _ value: String) {
            if let node = XMLNode.attribute(withName: name, stringValue: value) as? XMLNode { element.addAttribute(node) }
        }
        func text(_ value: String, x: Int, y: Int, anchor: String = "start", weight: String = "normal") -> XMLElement {
            let t = XMLElement(name: "text", stringValue: value)
            attr(t, "x", String(x)); attr(t, "y", String(y)); attr(t, "text-anchor", anchor); attr(t, "font-weight", weight)
            return t
        }
        let svg = XMLElement(name: "svg")
        attr(svg, "xmlns", "http://www.w3.org/2000/svg")
        attr(svg, "width", String(width)); attr(svg, "height", String(height))
        attr(svg, "viewBox", "0 0 \(width) \(height)")
        attr(svg, "font-family", "sans-serif"); attr(svg, "font-size", "13")
        svg.addChild(text(title, x: 10, y: 24, weight: "bold"))
        for (i, g) in groups.enumerated() {
            let y = top + i * (barHeight + gap)
            let label = (g.key ?? "(none)") + (g.currency.map { " · " + $0 } ?? "")
            svg.addChild(text(label, x: labelWidth - 8, y: y + 16, anchor: "end"))
            let peak = largest[g.currency ?? ""] ?? 0
            let length = peak > 0 ? max(1, Int((abs(Double(g.total) ?? 0) / peak * Double(barWidth)).rounded())) : 1
            let bar = XMLElement(name: "rect")
            attr(bar, "x", String(labelWidth)); attr(bar, "y", String(y))
            attr(bar, "width", String(length)); attr(bar, "height", String(barHeight)); attr(bar, "fill", "#4a7fb5")
            svg.addChild(bar)
            svg.addChild(text("\(g.total) \(g.currency ?? "")  (\(g.count))", x: labelWidth + length + 6, y: y + 16))
        }
        return Data(("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + svg.xmlString + "\n").utf8)
    }
}
