import Foundation
import Mustache

/// `report --chart`: an SVG of one column chart per currency (amounts of different currencies are not
/// comparable), stacked top to bottom. Each column's height is its group's total relative to the
/// chart's largest; a refund (a negative total) hangs below the zero axis. Every label is written
/// rotated in room the layout reserved for it, so no label is cut off however long it is.
extension Report {
    /// Layout in pixels, for a 13 px sans-serif font.
    enum ChartLayout {
        static let margin = 20, titleHeight = 40, headingHeight = 30, plotHeight = 200
        static let columnWidth = 28, gap = 16, labelGap = 6, fontSize = 13
        static let spacing = columnWidth + gap

        /// How wide `text` may render at most: ASCII at 0.7 em (a sans-serif's widest capitals are
        /// ~0.75 em, its lowercase ~0.5), anything else at a full em (CJK).
        static func width(_ text: String) -> Int {
            text.unicodeScalars.reduce(0) { $0 + ($1.isASCII ? 9 : fontSize) }
        }
    }

    /// Written from a Mustache template, whose `{{…}}` escape what XML needs escaped (FoundationXML's
    /// XMLElement did it before, and brought libxml2 and ICU into the start of every command).
    public func svg(title: String) throws -> Data {
        typealias L = ChartLayout
        var charts: [[String: Any]] = []
        var top = L.titleHeight
        var width = L.width(title) + 2 * L.margin
        for (currency, groups) in byCurrency() {
            let chart = Self.chart(currency: currency, groups, top: top)
            charts.append(chart.context)
            top += chart.height
            width = max(width, chart.width)
        }
        let context: [String: Any] = ["width": width, "height": top + L.margin, "title": Self.xmlText(title),
                                      "titleY": L.titleHeight - 14, "margin": L.margin, "charts": charts]
        do {
            return Data(try MustacheTemplate(string: Self.chartTemplate).render(context).utf8)
        } catch {
            throw VaultError(.io, "cannot write the chart: \(error)")
        }
    }

    /// The groups of each currency, currencies in order (receipts without one last), groups in the
    /// report's order.
    func byCurrency() -> [(String?, [Group])] {
        var order: [String?] = []
        var groupsOf: [String?: [Group]] = [:]
        for g in groups {
            if groupsOf[g.currency] == nil { order.append(g.currency) }
            groupsOf[g.currency, default: []].append(g)
        }
        order.sort { a, b in (a == nil ? 1 : 0, a ?? "") < (b == nil ? 1 : 0, b ?? "") }
        return order.map { ($0, groupsOf[$0] ?? []) }
    }

    /// One currency's chart, from `top` down: its heading, room for the amounts above the columns,
    /// the columns above and below the axis, room for the refunds' amounts, then the keys.
    static func chart(currency: String?, _ groups: [Group], top: Int) -> (context: [String: Any], height: Int, width: Int) {
        typealias L = ChartLayout
        // Only the columns' heights are computed in floating point; the labels are the exact sums.
        let values = groups.map { Double($0.total) ?? 0 }
        let highest = max(0, values.max() ?? 0), lowest = max(0, -(values.min() ?? 0))
        let span = highest + lowest
        let above = span > 0 ? Int((Double(L.plotHeight) * highest / span).rounded()) : L.plotHeight
        let amounts = groups.map { "\($0.total) \($0.currency ?? "")  (\($0.count))" }
        let keys = groups.map { $0.key ?? "(none)" }
        func room(_ texts: [String]) -> Int { texts.map(L.width).max().map { $0 + L.labelGap } ?? 0 }
        let roomAbove = room(zip(amounts, values).filter { $0.1 >= 0 }.map(\.0))
        let roomBelow = room(zip(amounts, values).filter { $0.1 < 0 }.map(\.0))
        let axisY = top + L.headingHeight + roomAbove + above
        let keysY = axisY + (L.plotHeight - above) + roomBelow + L.labelGap
        let columns: [[String: Any]] = groups.indices.map { i in
            let x = L.margin + i * L.spacing
            let length = span > 0 ? max(1, Int((abs(values[i]) / span * Double(L.plotHeight)).rounded())) : 1
            let refund = values[i] < 0
            // Rotated text stands on its baseline: shifted by a third of the font, it is centred on the column.
            let textX = x + L.columnWidth / 2 + L.fontSize / 3
            let amountY = refund ? axisY + length + L.labelGap : axisY - length - L.labelGap
            return ["x": x, "y": refund ? axisY : axisY - length, "height": length, "refund": refund,
                    "textX": textX, "amountY": amountY, "amountAnchor": refund ? "end" : "start",
                    "amount": xmlText(amounts[i]), "keyY": keysY, "key": xmlText(keys[i])]
        }
        let heading = currency ?? "(no currency)"
        let width = max(2 * L.margin + groups.count * L.spacing, 2 * L.margin + L.width(heading))
        let context: [String: Any] = ["headingY": top + L.headingHeight - 10, "heading": xmlText(heading), "axisY": axisY,
                                      "axisEnd": L.margin + groups.count * L.spacing - L.gap / 2, "columns": columns]
        return (context, keysY + room(keys) - top, width)
    }

    static let chartTemplate = """
        <?xml version="1.0" encoding="UTF-8"?>
        <svg xmlns="http://www.w3.org/2000/svg" width="{{width}}" height="{{height}}" viewBox="0 0 {{width}} {{height}}" \
        font-family="sans-serif" font-size="13">
        <text x="{{margin}}" y="{{titleY}}" text-anchor="start" font-weight="bold">{{title}}</text>
        {{#charts}}
        <g class="chart">
        <text class="heading" x="{{margin}}" y="{{headingY}}" text-anchor="start" font-weight="bold">{{heading}}</text>
        {{#columns}}
        <rect x="{{x}}" y="{{y}}" width="28" height="{{height}}" fill="{{#refund}}#c0504d{{/refund}}{{^refund}}#4a7fb5{{/refund}}"/>
        <text class="amount" x="{{textX}}" y="{{amountY}}" text-anchor="{{amountAnchor}}" transform="rotate(-90 {{textX}} {{amountY}})">{{amount}}</text>
        <text class="key" x="{{textX}}" y="{{keyY}}" text-anchor="end" transform="rotate(-90 {{textX}} {{keyY}})">{{key}}</text>
        {{/columns}}
        <line class="axis" x1="{{margin}}" y1="{{axisY}}" x2="{{axisEnd}}" y2="{{axisY}}" stroke="#333" stroke-width="1"/>
        </g>
        {{/charts}}
        </svg>

        """

    /// `text` with the characters XML 1.0 cannot hold at all (controls but tab and line ends) replaced.
    static func xmlText(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { scalar in
            scalar.value < 0x20 && scalar != "\t" && scalar != "\n" && scalar != "\r" ? "\u{FFFD}" : scalar
        }))
    }
}
