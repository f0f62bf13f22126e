import Foundation
import TestSupport
import XCTest

/// The web view in headless Chromium: tools/web-browser-test drives the real `receipt server run`
/// with four accounts (owner, write member, read member, outsider), over the embedded catalog and
/// over PostgreSQL; tools/web-phone-test the same server at phone and desktop sizes (no sideways
/// scroll, thumbnails shown, upload in the first screen) and the claim workflow (bulk change by the
/// owner, refused for a read member). A missing Chromium, chromedriver or selenium makes the
/// scripts, and so these tests, fail.
final class WebBrowserTests: XCTestCase {
    func testHouseholdInABrowser() throws {
        try browse([])
    }

    /// The same household with the server's catalog in a real PostgreSQL (sign-in, sessions, the
    /// lists, uploads, revocation).
    func testHouseholdInABrowserOnPostgreSQL() throws {
        try browse(["--database", try PostgresCluster.shared().createDatabase()])
    }

    func testPhoneAndDesktopSizesAndTheClaimWorkflow() throws {
        try browse([], script: "web-phone-test")
    }

    func testPhoneAndDesktopSizesAndTheClaimWorkflowOnPostgreSQL() throws {
        try browse(["--database", try PostgresCluster.shared().createDatabase()], script: "web-phone-test")
    }

    func browse(_ arguments: [String], script name: String = "web-browser-test") throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("tools/\(name)").path
        // The python3 on PATH: the one tools/install-deps gave selenium to.
        let result = try ReceiptBinary.run(["python3", script, ReceiptBinary.path] + arguments, executable: "/usr/bin/env")
        print(result.stdout)
        XCTAssertEqual(result.status, 0, "tools/\(name) failed:\n\(result.stdout)\n\(result.stderr)")
    }
}
