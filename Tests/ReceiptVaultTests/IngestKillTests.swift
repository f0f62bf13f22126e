import BlobStore
import Foundation
import ReceiptCatalog
import ReceiptVault
import TestSupport
import XCTest

/// Callers of the ingest path (attach, fsck --repair's adoption) as the real binary, SIGKILLed at
/// moments of their work: while a blob is being staged, once a blob file is installed, once the
/// catalog's log grew by some commits. After every kill fsck finds no damage and the vault is as it
/// was before the command or as it is after it; the command run again completes. (Import, manifest
/// import and watch: `tools/crashtest`, CrashTests, WatchKillTests; sync pull: PullKillTests.)
final class IngestKillTests: XCTestCase {
    /// Where a kill lands: conditions on the vault's files, polled while the command runs.
    enum Moment: CaseIterable {
        case atStart, whileStaging, onceInstalled, afterCommits

        func reached(_ vault: String, blob: String?, walBefore: Int64, commits: Int64) -> Bool {
            switch self {
            case .atStart:
                return true
            case .whileStaging:
                return ((try? FileSystem.contents(of: vault + "/interim")) ?? []).contains { $0.hasSuffix(".interim") }
            case .onceInstalled:
                return blob.map { FileSystem.exists(Integrity.blobPath(vault, $0)) } ?? false
            case .afterCommits:
                // Each committed transaction appends at least a page (16 KiB) to the write-ahead log.
                let wal = (try? FileSystem.status(vault + "/catalog.sqlite-wal"))?.size ?? 0
                return wal >= walBefore + commits * 16_384
            }
        }
    }

    /// Runs the binary and SIGKILLs it the first time `moment` holds; true when it was killed (it
    /// may end first: then the state must be the "after" one).
    static func kill(_ arguments: [String], vault: String, at moment: Moment, blob: String? = nil, commits: Int64 = 1) throws -> Bool {
        let walBefore = (try? FileSystem.status(vault + "/catalog.sqlite-wal"))?.size ?? 0
        return try Integrity.kill(arguments) { moment.reached(vault, blob: blob, walBefore: walBefore, commits: commits) }
    }

    /// fsck (a full re-hash) finds nothing but what a kill legitimately leaves: staging files and
    /// blob files no row records yet (gc and fsck --repair clean them).
    static func assertNoDamage(_ vault: String, _ context: String, file: StaticString = #filePath, line: UInt = #line) async throws {
        let report = try await Integrity.fsck(vault)
        let damage = report.problems.filter { ![.staleInterim, .orphanBlob].contains($0.kind) }
        XCTAssertEqual(damage, [], context, file: file, line: line)
    }

    static func run(_ arguments: [String]) throws -> ReceiptBinary.Result {
        _ = try Integrity.binary()
        return try ReceiptBinary.run(arguments)
    }

    static func attachments(_ vault: String, _ id: String) throws -> [String] {
        let out = try run(["--vault", vault, "show", id, "--json"])
        let receipt = try XCTUnwrap(try JSONSerialization.jsonObject(with: out.stdoutData) as? [String: Any], out.stderr)
        return (receipt["attachments"] as? [[String: Any]] ?? []).compactMap { $0["sha256"] as? String }
    }

    func testAttachKilledMidWayLeavesTheReceiptAsBeforeOrAfter() async throws {
        let dir = TemporaryFolder()
        let vault = dir.file("vault")
        XCTAssertEqual(try Self.run(["--vault", vault, "init"]).status, 0)
        let first = try dir.write("in/first.txt", TestData.text(2_000, seed: 1))
        let imported = try Self.run(["--vault", vault, "import", first, "--json"])
        let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: imported.stdoutData) as? [String: Any], imported.stderr)
        let id = try XCTUnwrap((report["imported"] as? [[String: Any]])?.first?["id"] as? String)
        var kills = 0
        for (round, moment) in (Moment.allCases + Moment.allCases).enumerated() {
            // Large enough to be staged (not inline) and to take a while to hash and fsync.
            let bytes = TestData.random(4 << 20, seed: UInt64(100 + round))
            let sha = TestData.sha256(bytes)
            let path = try dir.write("in/page\(round).bin", bytes)
            let before = try Self.attachments(vault, id)
            if try Self.kill(["--vault", vault, "attach", id, path], vault: vault, at: moment, blob: sha) { kills += 1 }
            let context = "round \(round), killed \(moment)"
            try await Self.assertNoDamage(vault, context)
            let now = try Self.attachments(vault, id)
            XCTAssertTrue(now == before || now == before + [sha], "\(context): \(before) became \(now)")
            // Run again to the end: the page is attached, once.
            XCTAssertEqual(try Self.run(["--vault", vault, "attach", id, path]).status, 0, context)
            XCTAssertEqual(try Self.attachments(vault, id), before + [sha], context)
        }
        XCTAssertGreaterThan(kills, 0, "no attach was caught at work")
        print("IngestKillTests: \(kills) of 8 attaches killed")
        XCTAssertEqual(try Self.run(["--vault", vault, "fsck", "--repair"]).status, 0)
        let clean = try await Integrity.fsck(vault)
        XCTAssertEqual(clean.problems, [])
    }

    func testRepairKilledMidWayAdoptsEachOrphanOnceOrNotYet() async throws {
        let dir = TemporaryFolder()
        // A vault whose blob files lost their rows: another vault's blob tree, copied into a fresh one.
        let (source, report) = try Integrity.vault(in: dir, external: 40)
        try source.close()
        let vault = dir.file("orphans")
        XCTAssertEqual(try Self.run(["--vault", vault, "init"]).status, 0)
        for item in report.imported {
            let target = Integrity.blobPath(vault, item.sha256)
            try FileSystem.makeDirectories((target as NSString).deletingLastPathComponent, mode: 0o700)
            try FileManager.default.copyItem(atPath: Integrity.blobPath(dir.file("vault"), item.sha256), toPath: target)
        }
        let blobs = Set(report.imported.map(\.sha256))
        /// Each blob is a receipt of zone `recovered` once, or not yet.
        func adopted(_ context: String) throws -> Set<String> {
            let opened = try Vault.open(at: vault)
            defer { try? opened.close() }
            let shas = try opened.list().filter { $0.zone == Zone.recovered }.flatMap(\.attachments).map(\.sha256)
            XCTAssertEqual(shas.count, Set(shas).count, "\(context): a blob was adopted twice")
            XCTAssertTrue(Set(shas).isSubset(of: blobs), context)
            return Set(shas)
        }
        var kills = 0
        var round = 0
        var midWay = 0  // rounds killed with some orphans adopted and some not
        for moment in [Moment.atStart, .afterCommits, .afterCommits, .afterCommits, .afterCommits] {
            round += 1
            if try Self.kill(["--vault", vault, "fsck", "--repair"], vault: vault, at: moment, commits: Int64(round * 3)) { kills += 1 }
            let context = "round \(round), killed \(moment)"
            try await Self.assertNoDamage(vault, context)
            let done = try adopted(context)
            if !done.isEmpty && done.count < blobs.count { midWay += 1 }
            // What is not adopted yet is still a blob file no row records: nothing was lost.
            for sha in blobs.subtracting(done) { XCTAssertTrue(FileSystem.exists(Integrity.blobPath(vault, sha)), "\(context): \(sha) lost") }
        }
        XCTAssertGreaterThan(kills, 1, "no repair was caught at work")
        XCTAssertGreaterThan(midWay, 0, "no repair was killed between two adoptions")
        print("IngestKillTests: \(kills) of 5 repairs killed, \(midWay) between two adoptions")
        XCTAssertEqual(try Self.run(["--vault", vault, "fsck", "--repair"]).status, 0)
        XCTAssertEqual(try adopted("after the last repair"), blobs)
        let clean = try await Integrity.fsck(vault)
        XCTAssertEqual(clean.problems, [])
    }
}
