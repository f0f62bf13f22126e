import BlobStore
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `receipt watch` killed with SIGKILL at random moments over an inbox of many files: after every
/// kill each file is still under the inbox or in `.imported/` with exactly one receipt, and no
/// receipt is ever made twice.
final class WatchKillTests: CLITestCase {
    func testKilledAtRandomMomentsNoFileIsLostAndNoneImportedTwice() throws {
        let seed = UInt64(Date().timeIntervalSince1970 * 1000)
        var random = SplitMix(seed)
        // 40 files of distinct content: small ones the catalog holds inline, larger staged blobs.
        var expected: [String: String] = [:]  // sha256 -> name
        for i in 0..<40 {
            let size = i % 3 == 0 ? 300_000 + Int(random.next() % 500_000) : 1_000 + Int(random.next() % 50_000)
            let bytes = TestData.random(size, seed: seed &+ UInt64(i))
            try folder.write("inbox/\(i % 4 == 0 ? "sub/" : "")f\(i).bin", bytes)
            expected[TestData.sha256(bytes)] = "f\(i).bin"
        }
        var kills = 0
        for _ in 0..<15 {
            let watch = try startWatch("--interval", "0.05", "--settle", "0")
            // The kill's moment: anywhere from start-up to well into the inbox (a random stimulus,
            // not a synchronisation: nothing waits on it).
            usleep(UInt32(random.next() % 700_000))
            watch.signal(SIGKILL)
            XCTAssertNotNil(watch.exitStatus())
            if watch.process.terminationReason == .uncaughtSignal { kills += 1 }
            try assertEveryFileOnce(expected, seed: seed)
            if files(under: inbox).allSatisfy({ $0.hasPrefix(".imported/") }) { break }
        }
        XCTAssertGreaterThan(kills, 0, "no run was killed (seed \(seed))")
        // A last run to the end takes the rest; every file is then a receipt, once.
        let out = try XCTUnwrap(try json(["watch", inbox, "--once", "--interval", "0.05", "--settle", "0"]) as? [String: Any])
        XCTAssertEqual((out["failed"] as? [Any])?.count, 0)
        try assertEveryFileOnce(expected, seed: seed)
        XCTAssertTrue(files(under: inbox).allSatisfy { $0.hasPrefix(".imported/") }, "\(files(under: inbox))")
        XCTAssertEqual(Set(try receiptHashes()), Set(expected.keys), "seed \(seed)")
        XCTAssertEqual(try receiptHashes().count, expected.count, "seed \(seed)")
        // fsck (a full re-hash) finds no damage; a kill legitimately leaves staging files and
        // orphan blobs, which gc and fsck --repair clean.
        let run = try receipt("fsck", "--json")
        XCTAssertTrue(run.status == 0 || run.status == 1, run.stderr)
        let fsck = try XCTUnwrap(try JSONSerialization.jsonObject(with: run.stdoutData) as? [String: Any])
        let damage = (fsck["problems"] as? [[String: Any]] ?? []).filter {
            !["stale-interim", "orphan-blob"].contains($0["kind"] as? String ?? "")
        }
        XCTAssertEqual(damage.count, 0, "\(damage) (seed \(seed))")
    }

    /// Every file exists exactly once under the inbox; one in `.imported/` has exactly one receipt;
    /// no content has two receipts.
    func assertEveryFileOnce(_ expected: [String: String], seed: UInt64, line: UInt = #line) throws {
        var found: [String: [String]] = [:]
        for path in files(under: inbox) {
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: inbox + "/" + path)))
            found[TestData.sha256(bytes), default: []].append(path)
        }
        let receipts = Dictionary(try receiptHashes().map { ($0, 1) }, uniquingKeysWith: +)
        for (sha, name) in expected {
            let copies = found[sha] ?? []
            XCTAssertEqual(copies.count, 1, "\(name): \(copies) (seed \(seed))", line: line)
            if let place = copies.first, place.hasPrefix(".imported/") {
                XCTAssertEqual(receipts[sha], 1, "\(name) moved to \(place) without exactly one receipt (seed \(seed))", line: line)
            }
            XCTAssertLessThanOrEqual(receipts[sha] ?? 0, 1, "\(name) imported twice (seed \(seed))", line: line)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: inbox + "/.failed"), "seed \(seed)", line: line)
    }
}

/// A seeded generator, so a failing run can be told apart (its seed is in every message).
struct SplitMix {
    private var state: UInt64
    init(_ seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
