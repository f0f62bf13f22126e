import Foundation
import TestSupport
import XCTest

/// `tools/crashtest` in a short round: the real binary killed with SIGKILL at random moments of
/// import, edit, rm and gc, the vault checked after every kill (docs/DESIGN.md, "Crash test results").
final class CrashTests: XCTestCase {
    func testRandomKillsLeaveVaultConsistent() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let script = root.appendingPathComponent("tools/crashtest").path
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: script), script)
        let result = try Integrity.bash("\"\(script)\" --rounds 20 --json --binary \"$RECEIPT\" 2>&1 >\"$OUT\"",
                                        environment: ["OUT": NSTemporaryDirectory() + "/crashtest-\(getpid()).json"])
        let outPath = NSTemporaryDirectory() + "/crashtest-\(getpid()).json"
        defer { try? FileManager.default.removeItem(atPath: outPath) }
        XCTAssertEqual(result.status, 0, result.output)
        let data = try Data(contentsOf: URL(fileURLWithPath: outPath))
        let figures = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any], result.output)
        XCTAssertEqual(figures["kills"] as? Int, 20, "\(figures)")
        XCTAssertEqual(figures["problems"] as? Int, 0, result.output)
        XCTAssertEqual(figures["corruptOrMissingBlobs"] as? Int, 0)
        XCTAssertEqual(figures["lostImports"] as? Int, 0)
        XCTAssertEqual(figures["failedNextRuns"] as? Int, 0)
        print("CrashTests: \(figures)")
    }
}
