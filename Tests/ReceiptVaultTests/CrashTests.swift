import BlobStore
import Foundation
import ReceiptCatalog
import ReceiptVault
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `tools/crashtest` in a short round: the real binary killed with SIGKILL at random moments of
/// import, edit, rm, gc and watch, the vault (and each watched inbox) checked after every kill
/// (docs/DESIGN.md, "Crash test results").
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
        XCTAssertEqual(figures["lostOrDuplicatedInboxFiles"] as? Int, 0)
        print("CrashTests: \(figures)")
    }

    /// The most delicate write of all, the catalog rebuild of `fsck --repair`, killed at random
    /// moments: the vault always has a catalog file, no blob file is ever lost, and the next repair
    /// completes with every blob in the catalog.
    func testKilledCatalogRebuildNeverLosesTheCatalogOrABlob() async throws {
        let dir = TemporaryFolder()
        let (vault, report) = try Integrity.vault(in: dir, external: 24)
        try vault.close()
        let path = dir.file("vault")
        // How long a whole repair takes here: the kills are drawn inside that span.
        try FsckTests.overwrite(path + "/catalog.sqlite", at: 0, with: TestData.random(4096, seed: 999))
        let started = Date()
        let first = try Integrity.start(["--vault", path, "fsck", "--repair"])
        first.waitUntilExit()
        XCTAssertEqual(first.terminationStatus, 0)
        let span = max(Date().timeIntervalSince(started), 0.02)
        var generator = SystemRandomNumberGenerator()
        var kills = 0
        var round = 0
        while kills < 8 && round < 60 {
            round += 1
            // Break the catalog's first page (again: the previous round may have repaired it).
            try FsckTests.overwrite(path + "/catalog.sqlite", at: 0, with: TestData.random(4096, seed: UInt64(round)))
            let repair = try Integrity.start(["--vault", path, "fsck", "--repair"])
            usleep(UInt32(Double.random(in: 0.1...0.95, using: &generator) * span * 1e6))
            if repair.isRunning {
                kill(repair.processIdentifier, SIGKILL)
                kills += 1
            }
            repair.waitUntilExit()
            XCTAssertTrue(FileSystem.exists(path + "/catalog.sqlite"), "round \(round): the vault has no catalog")
            for item in report.imported {
                XCTAssertTrue(FileSystem.exists(Integrity.blobPath(path, item.sha256)), "round \(round): blob \(item.sha256) lost")
            }
        }
        XCTAssertGreaterThanOrEqual(kills, 8, "the repairs were never caught at work")
        let final = try await Integrity.fsck(path, repair: true)
        XCTAssertTrue(final.ok, "\(final.problems)")
        let reopened = try Vault.open(at: path)
        defer { try? reopened.close() }
        let kept = Set(try reopened.list().flatMap(\.attachments).map(\.sha256))
        XCTAssertEqual(kept, Set(report.imported.map(\.sha256)))
        let clean = try await Integrity.fsck(path)
        XCTAssertEqual(clean.problems, [])
    }
}
