import Foundation
import ReceiptServer
import TestSupport
import XCTest

/// `receipt server backup` while a member keeps importing and syncing, then `restore` into a new
/// data folder (and database) served by a new server: a member pulling from it gets exactly the
/// receipts pushed up to one moment inside the backup, every attachment's bytes whole. Over the
/// embedded catalog here, over PostgreSQL (pg_dump, pg_restore) in the subclass.
class ServerBackupTests: HouseholdTestCase {
    /// Ids pushed so far, in order, and whether the writer should stop; shared with its task.
    final class Pushed: @unchecked Sendable {
        private let lock = NSLock()
        private var ids: [String] = []
        private var stopping = false
        func append(_ id: String) { lock.withLock { ids.append(id) } }
        var all: [String] { lock.withLock { ids } }
        func stop() { lock.withLock { stopping = true } }
        var stopped: Bool { lock.withLock { stopping } }
    }

    func testABackupTakenUnderWritesRestoresIntoAServerThatServesItsMoment() async throws {
        let h = try await Household.start(["alice"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"]
        let pushed = Pushed()
        let importAndSync: @Sendable (Int) async throws -> Void = { n in
            let file = try h.file("r\(n).bin", size: 3000 + n * 917, seed: UInt64(n))
            let id = importedID(try await h["alice"].ok(["import", file.path, "--merchant", "Shop \(n)", "--json"]))
            _ = try await h["alice"].sync()
            pushed.append(id)
        }
        for n in 0..<3 { try await importAndSync(n) }
        let writer = Task {
            var n = 3
            while !pushed.stopped { try await importAndSync(n); n += 1 }
            try await importAndSync(n)  // one more after the backup ended: not in it
        }
        // The writer is running: wait (with a deadline) until its first write lands, so the backup overlaps writes.
        let deadline = Date().addingTimeInterval(120)
        while pushed.all.count < 4 && Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        let before = pushed.all.count
        // On another file system (tmpfs) than the data folder: the blobs are copied, not linked.
        let backup = "/dev/shm/receipt-backup-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: backup) }
        var args = ["server", "backup", backup, "--data", h.server.data, "--json"]
        if let url = Household.database { args += ["--database", url] }
        let taken = try await CLI.run(args, in: h.folder)
        let after = pushed.all.count
        pushed.stop()
        try await writer.value
        XCTAssertEqual(taken.status, 0, taken.stderr)
        let manifest = try XCTUnwrap(taken.json as? [String: Any], taken.stdout)
        XCTAssertEqual(manifest["catalog"] as? String, Household.database == nil ? "sqlite" : "postgres")
        XCTAssertEqual(manifest["linkedBlobs"] as? Int, 0, "across file systems every blob is copied")
        XCTAssertGreaterThanOrEqual(manifest["blobs"] as? Int ?? 0, before)

        let checked = try await CLI.run(["server", "backup", "--check", backup], in: h.folder)
        XCTAssertEqual(checked.status, 0, checked.stdout + checked.stderr)
        XCTAssertTrue(checked.stdout.hasPrefix("ok: "), checked.stdout)

        // Restore into a new folder (and a new, empty database) and serve it.
        let restoredData = h.folder.file("restored")
        let originalDatabase = Household.database
        let restoredDatabase = try originalDatabase.map { _ in try PostgresCluster.shared().createDatabase() }
        let restored = try await CLI.run(["server", "restore", backup, "--data", restoredData]
                                         + (restoredDatabase.map { ["--database", $0] } ?? []), in: h.folder)
        XCTAssertEqual(restored.status, 0, restored.stderr)
        Household.database = restoredDatabase
        let server = try await TestServer.start(data: restoredData)
        Household.database = originalDatabase
        defer { Task { await server.stop() } }

        let fresh = Member(name: "alice", token: alice.token, vault: h.folder.file("vault-restored"), folder: h.folder)
        try await fresh.ok(["init"])
        try await fresh.ok(["remote", "set", server.url, "--account", "alice", "--token", alice.token])
        _ = try await fresh.sync()
        let got = try await fresh.receipts()
        let all = pushed.all
        let k = got.count
        XCTAssertTrue((before...after + 1).contains(k), "restored \(k) receipts; the backup ran between \(before) and \(after) pushed")
        XCTAssertEqual(Set(got.keys), Set(all.prefix(k)), "the restored zone is the original's at one moment: a prefix of the pushes")
        let original = try await alice.receipts()
        for (id, receipt) in got {
            XCTAssertEqual(receipt["merchant"] as? String, original[id]?["merchant"] as? String)
            XCTAssertEqual(receipt["attachments"] as? NSArray, original[id]?["attachments"] as? NSArray, "attachments of \(id)")
        }
        let fsck = try await fresh.run(["fsck"])
        XCTAssertEqual(fsck.status, 0, "every pulled blob hashes to its address: \(fsck.stdout)")
    }

    func testBadInputsChangeNothing() async throws {
        let h = try await Household.start(["alice"])
        defer { Task { await h.shutdown() } }
        let file = try h.file("a.bin", size: 5000, seed: 7)
        try await h["alice"].ok(["import", file.path])
        _ = try await h["alice"].sync()
        let database = Household.database.map { ["--database", $0] } ?? []
        let backup = h.folder.file("backup")
        let first = try await CLI.run(["server", "backup", backup, "--data", h.server.data, "--json"] + database, in: h.folder)
        XCTAssertEqual(first.status, 0, first.stderr)
        XCTAssertEqual((first.json as? [String: Any])?["linkedBlobs"] as? Int, 1, "on one file system the blob is hard-linked")

        func refused(_ args: [String], saying words: String, status: Int32 = 2) async throws {
            let r = try await CLI.run(args, in: h.folder)
            XCTAssertEqual(r.status, status, "\(args): \(r.stderr)")
            XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, r.stderr)
            XCTAssertTrue(r.stderr.contains(words), "\(args): \(r.stderr)")
        }
        // Into a folder that holds something: refused, the folder as it was.
        let busy = h.folder.file("busy")
        try h.folder.write("busy/keep.txt", Array("mine\n".utf8))
        try await refused(["server", "backup", busy, "--data", h.server.data] + database, saying: "not empty")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: busy), ["keep.txt"])
        try await refused(["server", "restore", backup, "--data", busy] + database, saying: "not empty")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: busy), ["keep.txt"])
        // A folder that is no server's data, no backup, or no --data at all.
        try await refused(["server", "backup", h.folder.file("b2"), "--data", busy] + database,
                          saying: "not a receipt server data folder")
        XCTAssertFalse(FileManager.default.fileExists(atPath: h.folder.file("b2")))
        try await refused(["server", "backup", "--check", busy], saying: "not a receipt server backup")
        try await refused(["server", "restore", busy, "--data", h.folder.file("r2")] + database, saying: "not a receipt server backup")
        XCTAssertFalse(FileManager.default.fileExists(atPath: h.folder.file("r2")))
        try await refused(["server", "backup", h.folder.file("b3")], saying: "--data", status: 64)
        // A backup that lost a blob: --check names it (exit 1), restore refuses it and makes nothing.
        let blobs = backup + "/blobs"
        let fan = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: blobs).first)
        let lost = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: blobs + "/" + fan).first)
        try FileManager.default.removeItem(atPath: blobs + "/" + fan + "/" + lost)
        let check = try await CLI.run(["server", "backup", "--check", backup], in: h.folder)
        XCTAssertEqual(check.status, 1, check.stdout + check.stderr)
        XCTAssertTrue(check.stdout.contains("damaged"), check.stdout)
        try await refused(["server", "restore", backup, "--data", h.folder.file("r3")] + database, saying: "fails its check")
        XCTAssertFalse(FileManager.default.fileExists(atPath: h.folder.file("r3")))
    }
}

final class PostgresServerBackupTests: ServerBackupTests {
    override class var postgres: Bool { true }

    /// (A test of its own also makes XCTest on Linux find the inherited ones.)
    func testARestoreRefusesADatabaseThatIsNotEmpty() async throws {
        let h = try await Household.start(["alice"])
        defer { Task { await h.shutdown() } }
        let url = try XCTUnwrap(Household.database)
        let backup = h.folder.file("backup")
        let taken = try await CLI.run(["server", "backup", backup, "--data", h.server.data, "--database", url], in: h.folder)
        XCTAssertEqual(taken.status, 0, taken.stderr)
        let r = try await CLI.run(["server", "restore", backup, "--data", h.folder.file("r"), "--database", url], in: h.folder)
        XCTAssertEqual(r.status, 2, r.stderr)
        XCTAssertTrue(r.stderr.contains("is not empty"), r.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: h.folder.file("r")))
    }
}
