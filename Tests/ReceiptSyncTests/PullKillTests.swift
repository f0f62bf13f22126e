import BlobStore
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// A sync pulling a shared zone — a caller of the vault's ingest path — SIGKILLed at moments of its
/// work: at start, while a download is staged, once some blob files are installed, once the catalog's
/// log grew by some commits. Each round pulls receipts alice just added. After every kill fsck finds
/// no damage, every receipt pulled before is there, and each receipt the vault has is the one the
/// server has, whole (as before the pull or as after it); the next sync completes and brings the rest.
final class PullKillTests: XCTestCase {
    enum Moment {
        case atStart, whileStaging, blobsInstalled(Int), afterCommits(Int64)
    }

    static func blobFiles(_ vault: String) -> Int {
        let folders = (try? FileSystem.contents(of: vault + "/blobs")) ?? []
        return folders.reduce(0) { $0 + ((try? FileSystem.contents(of: vault + "/blobs/" + $1)) ?? []).count }
    }

    static func reached(_ moment: Moment, vault: String, walBefore: Int64, blobFilesBefore: Int) -> Bool {
        switch moment {
        case .atStart:
            return true
        case .whileStaging:
            return ((try? FileSystem.contents(of: vault + "/interim")) ?? []).contains { $0.hasSuffix(".interim") }
        case .blobsInstalled(let count):
            return blobFiles(vault) >= blobFilesBefore + count
        case .afterCommits(let commits):
            // Each committed transaction appends at least a page (16 KiB) to the write-ahead log.
            let wal = (try? FileSystem.status(vault + "/catalog.sqlite-wal"))?.size ?? 0
            return wal >= walBefore + commits * 16_384
        }
    }

    func testPullKilledMidWayKeepsEachReceiptAsBeforeOrAfter() async throws {
        let h = try await Household.start(["alice", "bob"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"], bob = h["bob"]
        try await alice.ok(["zone", "create", "household"])
        try await alice.ok(["share", "household", "bob", "--role", "write"])
        func blobs(_ receipt: [String: Any]?) -> [String] {
            (receipt?["attachments"] as? [[String: Any]] ?? []).compactMap { $0["sha256"] as? String }
        }

        var kills = 0
        var betweenInstallAndCommit = 0  // kills that left blob files installed whose receipts were not committed
        let moments: [Moment] = [.atStart, .whileStaging, .blobsInstalled(1), .afterCommits(1), .blobsInstalled(2),
                                 .blobsInstalled(1), .whileStaging, .blobsInstalled(3)]
        var before = try await bob.receipts()
        for (round, moment) in moments.enumerated() {
            // Alice adds receipts for this round's pull: small (inline) and large (staged) files.
            for i in 0..<5 {
                _ = try h.file("round\(round)/r\(i).bin", size: i % 2 == 0 ? 500 + i : 300_000 + 50_000 * i,
                               seed: UInt64(1000 * round + i))
            }
            try await alice.ok(["import", h.folder.file("files/round\(round)"), "--zone", "household", "--merchant", "Bulk"])
            _ = try await alice.sync()
            let expected = try await alice.receipts(zone: "household")
            let walBefore = (try? FileSystem.status(bob.vault + "/catalog.sqlite-wal"))?.size ?? 0
            let blobFilesBefore = Self.blobFiles(bob.vault)
            let output = bob.folder.file("pull-\(round)")
            let process = try CLI.start(["sync", "--vault", bob.vault], output: output)
            while process.isRunning {
                if Self.reached(moment, vault: bob.vault, walBefore: walBefore, blobFilesBefore: blobFilesBefore) {
                    kill(process.processIdentifier, SIGKILL)
                    break
                }
                usleep(100)  // polling a condition, not a delay: the kill waits for the moment
            }
            let result = await CLI.wait(process, output: output)
            let context = "round \(round), killed \(moment)"
            XCTAssertTrue(result.signaled || result.status == 0, "\(context): sync failed on its own: \(result.stderr)")
            if result.signaled { kills += 1 }

            let fsck = try await bob.run(["fsck", "--json"])
            let problems = (fsck.json as? [String: Any])?["problems"] as? [[String: Any]] ?? []
            let damage = problems.filter { !["stale-interim", "orphan-blob"].contains($0["kind"] as? String ?? "") }
            XCTAssertEqual(damage.count, 0, "\(context): \(damage)")
            if problems.contains(where: { $0["kind"] as? String == "orphan-blob" }) { betweenInstallAndCommit += 1 }
            // Every receipt bob had is still there; every one he has is alice's, whole (fsck re-hashed
            // its blobs).
            let have = try await bob.receipts()
            XCTAssertTrue(Set(before.keys).isSubset(of: Set(have.keys)), context)
            XCTAssertTrue(Set(have.keys).isSubset(of: Set(expected.keys)), context)
            for (id, receipt) in have {
                XCTAssertEqual(blobs(receipt), blobs(expected[id]), "\(context): receipt \(id)")
                XCTAssertEqual(receipt["merchant"] as? String, "Bulk", "\(context): receipt \(id)")
            }
            // The next sync completes and brings the rest.
            _ = try await bob.sync()
            before = try await bob.receipts()
            XCTAssertEqual(Set(before.keys), Set(expected.keys), context)
        }
        XCTAssertGreaterThan(kills, 0, "no pull was caught at work")
        XCTAssertGreaterThan(betweenInstallAndCommit, 0, "no pull was killed between installing a blob and committing its receipt")
        print("PullKillTests: \(kills) of \(moments.count) pulls killed, \(betweenInstallAndCommit) between install and commit")
        let fsck = try await bob.run(["fsck", "--repair", "--json"])
        XCTAssertEqual(fsck.status, 0, fsck.stdout)
        let clean = try await bob.run(["fsck", "--json"])
        XCTAssertEqual((clean.json as? [String: Any])?["ok"] as? Bool, true, clean.stdout)
    }
}
