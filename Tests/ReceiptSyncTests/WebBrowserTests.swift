import Foundation
import TestSupport
import XCTest

/// The web view in headless Chromium: tools/web-browser-test drives the real `receipt server run`
/// with four accounts (owner, write member, read member, outsider), over the embedded catalog and
/// over PostgreSQL. A missing Chromium,
/// chromedriver or selenium makes the script, and so this test, fail.
final class WebBrowserTests: XCTestCase {
    func testHouseholdInABrowser() throws {
        try browse([])
    }

    /// The same household with the server's catalog in a real PostgreSQL (sign-in, sessions, the
    /// lists, uploads, revocation).
    func testHouseholdInABrowserOnPostgreSQL() throws {
        try browse(["--database", try PostgresCluster.shared().createDatabase()])
    }

    func browse(_ arguments: [String]) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("tools/web-browser-test").path
        // The python3 on PATH: the one tools/install-deps gave selenium to.
        let result = try ReceiptBinary.run(["python3", script, ReceiptBinary.path] + arguments, executable: "/usr/bin/env")
        print(result.stdout)
        XCTAssertEqual(result.status, 0, "tools/web-browser-test failed:\n\(result.stdout)\n\(result.stderr)")
    }
}
