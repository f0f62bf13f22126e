import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
@testable import ReceiptVault
import XCTest

/// The SVG chart is XML a browser reads whatever the names in it: markup characters are escaped and
/// the controls XML cannot hold are replaced.
final class ReportChartTests: XCTestCase {
    func testNamesWithMarkupAndControlsMakeWellFormedXMLThatSaysThem() throws {
        let report = Report(groups: [
            .init(key: "<b>Tom & Jerry's \"deli\"</b>", currency: "EUR", count: 2, total: "12.50"),
            .init(key: "bell\u{7}tab\there", currency: "USD", count: 1, total: "3"),
            .init(key: nil, currency: nil, count: 1, total: "0"),
        ], withoutTotal: 0)
        let svg = try report.svg(title: "Receipts by <merchant>")
        let parser = XMLParser(data: svg)
        XCTAssertTrue(parser.parse(), "well-formed: \(String(decoding: svg, as: UTF8.self))")
        let text = String(decoding: svg, as: UTF8.self)
        XCTAssertTrue(text.contains(">&lt;b&gt;Tom &amp; Jerry&#39;s &quot;deli&quot;&lt;/b&gt;<"), text)
        XCTAssertTrue(text.contains(">bell\u{FFFD}tab\there<"), text)
        XCTAssertTrue(text.contains("Receipts by &lt;merchant&gt;"), text)
        XCTAssertTrue(text.contains("12.50 EUR  (2)") && text.contains("(none)"), text)
        XCTAssertEqual(text.components(separatedBy: "<rect ").count - 1, 3, "one bar per group")
    }

    func testOneChartPerCurrencyRefundsBelowTheAxisAndNoLabelCutOff() throws {
        let long = "a-shop-whose-name-goes-on-and-on-and-on-for-a-long-while-indeed"
        let report = Report(groups: [
            .init(key: "groceries", currency: "EUR", count: 3, total: "120.50"),
            .init(key: long, currency: "EUR", count: 1, total: "-30.25"),
            .init(key: "travel", currency: "USD", count: 2, total: "999999999.99"),
            .init(key: "refunds only", currency: "CHF", count: 1, total: "-12"),
            .init(key: nil, currency: nil, count: 1, total: "4"),
        ], withoutTotal: 0)
        let svg = try report.svg(title: "Receipts by merchant")
        let elements = try SVGElements(svg)
        let root = try XCTUnwrap(elements.all.first { $0.name == "svg" })
        let (width, height) = (try XCTUnwrap(Double(root["width"])), try XCTUnwrap(Double(root["height"])))

        // One chart per currency, each headed by it; no column mixes currencies.
        let charts = elements.charts
        XCTAssertEqual(charts.map { $0.first { $0["class"] == "heading" }?.text }, ["CHF", "EUR", "USD", "(no currency)"])
        for chart in charts {
            let axis = try XCTUnwrap(chart.first { $0.name == "line" }.flatMap { Double($0["y1"]) })
            let amounts = chart.filter { $0["class"] == "amount" }
            for (rect, amount) in zip(chart.filter { $0.name == "rect" }, amounts) {
                let (y, h) = (try XCTUnwrap(Double(rect["y"])), try XCTUnwrap(Double(rect["height"])))
                if amount.text.hasPrefix("-") {
                    XCTAssertEqual(y, axis, "a refund hangs below the axis: \(amount.text)")
                } else {
                    XCTAssertEqual(y + h, axis, "a purchase stands on the axis: \(amount.text)")
                }
            }
        }
        XCTAssertTrue(elements.all.contains { $0.text == long }, "the long name is written whole")

        // Every text lies inside the picture, at 0.65 em a character (DejaVu Sans' lowercase and digits are narrower).
        for text in elements.all where text.name == "text" {
            let x = try XCTUnwrap(Double(text["x"])), y = try XCTUnwrap(Double(text["y"]))
            let length = Double(text.text.count) * 0.65 * 13
            let rotated = text["transform"].hasPrefix("rotate(-90")
            let along: (Double, Double) = text["text-anchor"] == "end" ? (-length, 0) : (0, length)
            let box = rotated ? (x - 13, x, y - along.1, y - along.0) : (x + along.0, x + along.1, y - 13, y)
            XCTAssertTrue(box.0 >= 0 && box.1 <= width && box.2 >= 0 && box.3 <= height,
                          "\(text.text.debugDescription) at \(box) is cut off by the \(width)×\(height) picture")
        }
    }
}

/// The elements of an SVG in document order, with their attributes and text, and the charts' own.
final class SVGElements: NSObject, XMLParserDelegate {
    struct Element {
        let name: String
        let attributes: [String: String]
        var text = ""
        subscript(_ key: String) -> String { attributes[key] ?? "" }
    }
    private(set) var all: [Element] = []
    private(set) var charts: [[Element]] = []
    private var open: [Int] = []

    init(_ data: Data) throws {
        super.init()
        let parser = XMLParser(data: data)
        parser.delegate = self
        guard parser.parse() else { throw parser.parserError ?? CocoaError(.fileReadCorruptFile) }
    }

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        if name == "g" && attributes["class"] == "chart" { charts.append([]) }
        all.append(Element(name: name, attributes: attributes))
        open.append(all.count - 1)
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if let index = open.last { all[index].text += string }
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        guard let index = open.popLast() else { return }
        // An element closed inside a chart's <g> (its text is whole by now) belongs to that chart.
        if open.contains(where: { all[$0].name == "g" && all[$0]["class"] == "chart" }) {
            charts[charts.count - 1].append(all[index])
        }
    }
}
