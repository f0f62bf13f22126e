import Foundation
import TestSupport
import XCTest

/// The web view in headless Chromium: tools/web-browser-test drives the real `receipt server run`
/// with four accounts (owner, write member, read member, outsider), over the embedded catalog and
/// over PostgreSQL: what each role sees and may do, phone and desktop sizes (no sideways scroll,
/// thumbnails shown, upload in the first screen), the claim workflow (bulk change by the owner,
/// refused for a read member, a claim package that verifies) and the review queue. A missing
/// Chromium, chromedriver or selenium makes the script, and so these tests, fail.
final class WebBrowserTests: XCTestCase {
    func testHouseholdInABrowser() throws {
        try browse([])
    }

    /// The same household with the server's catalog in a real PostgreSQL.
    func testHouseholdInABrowserOnPostgreSQL() throws {
        try browse(["--database", try PostgresCluster.shared().createDatabase()])
    }

    func browse(_ arguments: [String]) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("tools/web-browser-test").path
        // Its python3 is the one on PATH: the one tools/install-deps gave selenium to.
        let result = try ReceiptBinary.run(["sh", script, ReceiptBinary.path] + arguments, executable: "/usr/bin/env")
        print(result.stdout)
        XCTAssertEqual(result.status, 0, "tools/web-browser-test failed:\n\(result.stdout)\n\(result.stderr)")
    }
}
