import BlobStore
import ReceiptCatalog
import Dispatch
import Foundation
import GRDB
@testable import ReceiptSync
import ReceiptVault
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// A pull that began before `fsck --repair` replaced the catalog (it waits for the vault lock the
/// repair holds) must not commit into the catalog the repair set aside: it stops with one clear
/// error, the set-aside catalog is as the repair left it, and the next sync brings everything.
final class RepairDuringPullTests: HouseholdTestCase {
    /// Signals once, from whichever thread calls first.
    final class Signal: @unchecked Sendable {
        let semaphore = DispatchSemaphore(value: 0)
        private let once = NSLock()
        private var fired = false

        func fire() {
            once.lock()
            defer { once.unlock() }
            if !fired { fired = true; semaphore.signal() }
        }
    }

    func testAPullWaitingForTheRepairsLockDoesNotCommitIntoTheSetAsideCatalog() async throws {
        let h = try await Household.start(["alice"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"]
        var ids: [String] = []
        for i in 0..<3 {
            let file = try h.file("pharmacy-\(i).bin", size: 5_000 + i, seed: 300 + UInt64(i))
            ids.append(importedID(try await alice.ok(["import", file.path, "--json"])))
        }
        _ = try await alice.sync()

        // A second machine of alice's, with a receipt of its own, whose catalog is damaged where the
        // pull never reads (an index of extracted text): fsck --repair will set it aside.
        let second = Member(name: "alice", token: alice.token, vault: h.folder.file("vault-alice-2"), folder: h.folder)
        try await second.ok(["init", "--inline-threshold", "1024"])
        try await second.ok(["remote", "set", h.server.url, "--account", "alice", "--token", alice.token])
        let own = importedID(try await second.ok(["import", try h.file("own.bin", size: 4_000, seed: 399).path, "--json"]))
        try Self.damageIndex(second.vault, "blobText_by_extractedAt")

        let vault = try Vault.open(at: second.vault)
        let engine = try SyncEngine(vault: vault, remote: try XCTUnwrap(try RemoteConfig.load(vault)))
        let zone = ZoneRef(local: "personal", owner: "alice", remote: "personal", role: .owner)

        // The repair holds the exclusive lock from before it sets the catalog aside until it is done;
        // once the new catalog is in place, it waits (still holding it) for the pull to be waiting.
        let swapped = Signal(), pullWaits = Signal()
        VaultLock.waiting.withLock { $0 = { _ in pullWaits.fire() } }
        defer { VaultLock.waiting.withLock { $0 = nil } }
        let path = second.vault
        let repair = Task.detached {
            try await Vault.fsck(at: path, options: FsckOptions(repair: true), onProblem: { problem in
                guard problem.kind == .catalog else { return }
                swapped.fire()
                _ = pullWaits.semaphore.wait(timeout: .now() + 60)
            })
        }
        await Self.wait(for: swapped)
        do {
            try await engine.pull(zone)
            XCTFail("the pull committed into the catalog fsck --repair set aside")
        } catch {
            XCTAssertTrue("\(error)".contains("was replaced"), "\(error)")
            XCTAssertEqual("\(error)".split(separator: "\n").count, 1, "\(error)")
        }
        let repaired = try await repair.value
        XCTAssertTrue(repaired.ok, "\(repaired.problems)")
        try vault.close()

        // The set-aside catalog got nothing of the pull.
        let quarantine = second.vault + "/quarantine"
        let aside = try XCTUnwrap(try FileSystem.contents(of: quarantine).first { $0.hasPrefix("catalog-") })
        let old = try DatabaseQueue(path: quarantine + "/" + aside + "/catalog.sqlite")
        let oldIDs = try await old.read { try String.fetchAll($0, sql: "SELECT \(ReceiptID.shown("id")) FROM receipts") }
        try old.close()
        XCTAssertEqual(oldIDs, [own])

        // Nothing is lost: the next sync, on the new catalog, brings every receipt.
        _ = try await second.sync()
        let received = try await second.receipts()
        XCTAssertEqual(Set(received.keys), Set(ids + [own]))
        try await second.ok(["fsck"])
    }

    /// Waits for `signal` off the cooperative pool's threads.
    static func wait(for signal: Signal) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                _ = signal.semaphore.wait(timeout: .now() + 60)
                done.resume()
            }
        }
    }

    /// Overwrites the root page of index `name` of the vault's catalog (its log checkpointed first):
    /// SQLite's integrity check fails, reads and writes that do not use the index go on.
    static func damageIndex(_ vault: String, _ name: String) throws {
        let path = vault + "/catalog.sqlite"
        let queue = try DatabaseQueue(path: path)
        let (root, pageSize) = try queue.writeWithoutTransaction { db -> (Int, Int) in
            try db.checkpoint(.truncate)
            return (try Int.fetchOne(db, sql: "SELECT rootpage FROM sqlite_master WHERE name = ?", arguments: [name]) ?? 0,
                    try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096)
        }
        try queue.close()
        guard root > 0 else { throw HarnessError("no index \(name) in \(path)") }
        let fd = open(path, O_WRONLY)
        guard fd >= 0 else { throw PathError("opening", path: path, errno: errno) }
        defer { close(fd) }
        let junk = [UInt8](repeating: 0xEE, count: pageSize)
        let n = junk.withUnsafeBytes { pwrite(fd, $0.baseAddress, pageSize, off_t((root - 1) * pageSize)) }
        guard n == pageSize else { throw PathError("writing", path: path, errno: errno) }
    }
}
