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
        XCTAssertTrue(text.contains("&lt;b&gt;Tom &amp; Jerry&#39;s &quot;deli&quot;&lt;/b&gt; · EUR"), text)
        XCTAssertTrue(text.contains("bell\u{FFFD}tab\there · USD"), text)
        XCTAssertTrue(text.contains("Receipts by &lt;merchant&gt;"), text)
        XCTAssertTrue(text.contains("12.50 EUR  (2)") && text.contains("(none)"), text)
        XCTAssertEqual(text.components(separatedBy: "<rect ").count - 1, 3, "one bar per group")
    }
}
