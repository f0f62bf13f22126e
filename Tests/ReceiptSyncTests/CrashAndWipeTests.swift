import AsyncHTTPClient
import BlobStore
import Foundation
import NIOCore
import GRDB
import ReceiptCatalog
@testable import ReceiptVault
import ReceiptWire
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Syncs killed with SIGKILL, wipes racing a sync, and the server process's lifecycle, all driving
/// the built `receipt` binary as child processes.
final class CrashAndWipeTests: XCTestCase {
    /// Checks a vault the way fsck does: SQLite integrity and foreign keys, every blob present and
    /// hashing to its address, no blob file without a row, no staging file left.
    func assertClean(_ member: Member, file: StaticString = #filePath, line: UInt = #line) async throws {
        let fsck = try await member.run(["fsck", "--json"])
        XCTAssertEqual(fsck.status, 0, "fsck found problems in \(member.name)'s vault: \(fsck.stdout)", file: file, line: line)
        XCTAssertEqual((fsck.json as? [String: Any])?["ok"] as? Bool, true, fsck.stdout, file: file, line: line)
        let vault = try Vault.open(at: member.vault)
        defer { try? vault.close() }
        XCTAssertEqual(try vault.catalog.integrityProblems(), [], file: file, line: line)
        let records = try vault.catalog.read { try BlobRecord.fetchAll($0) }
        for record in records {
            XCTAssertNoThrow(try vault.readBlob(record) { _ in }, "blob \(record.sha256)", file: file, line: line)
        }
        let rows = Set(records.filter { $0.inline == nil }.map(\.sha256))
        for f in try vault.blobs.enumerate() {
            XCTAssertTrue(f.id.map { rows.contains($0) } ?? false, "unreferenced file \(f.path)", file: file, line: line)
        }
        XCTAssertEqual(try vault.blobs.interimFiles().map(\.path), [], file: file, line: line)
    }

    func outbox(_ member: Member) throws -> Int {
        let vault = try Vault.open(at: member.vault)
        defer { try? vault.close() }
        return try vault.catalog.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM changes") ?? -1 }
    }

    /// Starts `receipt sync` and SIGKILLs it after a random delay, `times` times.
    func killSyncs(_ member: Member, times: Int, minDelayMs: UInt32 = 5, maxDelayMs: UInt32,
                   rng: inout SystemRandomNumberGenerator) async throws -> Int {
        var killed = 0
        for _ in 0..<times {
            let output = member.folder.file("kill-" + SecureRandom.hex(4))
            let process = try CLI.start(["sync", "--vault", member.vault], output: output)
            let delay = UInt32.random(in: minDelayMs...max(minDelayMs, maxDelayMs), using: &rng)
            try await Task.sleep(nanoseconds: UInt64(delay) * 1_000_000)
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                killed += 1
            }
            let result = await CLI.wait(process, output: output)
            XCTAssertTrue(result.signaled || result.status == 0, "sync failed on its own: \(result.stderr)")
        }
        return killed
    }

    func testSyncKilledAtRandomMomentsThenRerunConverges() async throws {
        let h = try await Household.start(["alice", "bob"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"], bob = h["bob"]
        try await alice.ok(["zone", "create", "household"])
        for i in 0..<36 {
            _ = try h.file("batch/r\(i).bin", size: i % 2 == 0 ? 300 + i : 60_000 + 9_000 * i, seed: UInt64(100 + i))
        }
        try await alice.ok(["import", h.folder.file("files/batch"), "--zone", "household", "--merchant", "Bulk"])
        try await alice.ok(["share", "household", "bob", "--role", "write"])
        var rng = SystemRandomNumberGenerator()
        var killed = try await killSyncs(alice, times: 6, maxDelayMs: 400, rng: &rng)
        _ = try await alice.sync()
        killed += try await killSyncs(bob, times: 6, maxDelayMs: 400, rng: &rng)
        _ = try await bob.sync()
        checkEqual(try await bob.receipts().count, 36)

        // Both sides edit while syncs keep getting killed.
        let ids = try await alice.receipts().keys.sorted()
        for id in ids.prefix(6) { try await alice.ok(["edit", id, "--note", "alice \(id.prefix(4))"]) }
        for id in ids.suffix(6) { try await bob.ok(["edit", id, "--merchant", "bob \(id.prefix(4))"]) }
        try await bob.ok(["rm", ids[10], ids[11]])
        let extra = try h.file("late.bin", size: 250_000, seed: 999)
        try await bob.ok(["import", extra.path, "--zone", "alice/household"])
        killed += try await killSyncs(bob, times: 4, maxDelayMs: 300, rng: &rng)
        killed += try await killSyncs(alice, times: 4, maxDelayMs: 300, rng: &rng)
        // Every sync may have finished before its random moment came (20 draws of 5-400 ms against a
        // short sync): then time a whole sync here and kill the next ones inside that span, past its
        // first quarter (the process starting).
        if killed == 0 {
            let started = Date()
            _ = try await alice.sync()
            let spanMs = Date().timeIntervalSince(started) * 1000
            for _ in 0..<20 where killed == 0 {
                killed += try await killSyncs(alice, times: 1, minDelayMs: UInt32(max(1, spanMs / 4)),
                                              maxDelayMs: UInt32(max(1, spanMs * 0.9)), rng: &rng)
            }
        }
        for member in [alice, bob, alice, bob] { _ = try await member.sync() }
        XCTAssertGreaterThan(killed, 0, "no sync was running long enough to be killed")

        let a = try await alice.receipts(zone: "household")
        let b = try await bob.receipts(zone: "alice/household")
        XCTAssertEqual(a.count, 35)
        XCTAssertEqual(Set(a.keys), Set(b.keys))
        for (id, receipt) in a {
            XCTAssertEqual(receipt["merchant"] as? String, b[id]?["merchant"] as? String, id)
            XCTAssertEqual(receipt["note"] as? String, b[id]?["note"] as? String, id)
            XCTAssertEqual((receipt["attachments"] as? [[String: Any]])?.compactMap { $0["sha256"] as? String },
                           (b[id]?["attachments"] as? [[String: Any]])?.compactMap { $0["sha256"] as? String }, id)
        }
        for id in ids.prefix(6) { XCTAssertEqual(a[id]?["note"] as? String, "alice \(id.prefix(4))") }
        for id in ids.suffix(6) { XCTAssertEqual(b[id]?["merchant"] as? String, "bob \(id.prefix(4))") }
        XCTAssertEqual(try outbox(alice), 0)
        XCTAssertEqual(try outbox(bob), 0)
        try await assertClean(alice)
        try await assertClean(bob)
    }

    /// A sync killed between SQLite's creating a temporary file in interim/ and unlinking its name
    /// leaves `etilqs_…` behind (CI caught one in 2026-11): fsck calls it stale, the next sync removes
    /// it, and a file of no known kind stays for fsck to name.
    func testASQLiteTemporaryFileLeftByAKilledSyncIsRemovedByTheNextSync() async throws {
        let h = try await Household.start(["alice"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"]
        try await alice.ok(["zone", "create", "household"])
        _ = try await alice.sync()
        let left = alice.vault + "/interim/etilqs_7306b5cd3455cbbe", unknown = alice.vault + "/interim/notes.txt"
        try Data("partial sort".utf8).write(to: URL(fileURLWithPath: left))
        try Data("kept".utf8).write(to: URL(fileURLWithPath: unknown))
        let before = try await alice.run(["fsck", "--json"])
        XCTAssertEqual(before.status, 1, before.stdout)
        XCTAssertTrue(before.stdout.contains("etilqs_7306b5cd3455cbbe") && before.stdout.contains("stale-interim"), before.stdout)
        _ = try await alice.sync()
        XCTAssertFalse(FileManager.default.fileExists(atPath: left))
        XCTAssertTrue(FileManager.default.fileExists(atPath: unknown))
        try FileManager.default.removeItem(atPath: unknown)
        try await assertClean(alice)
    }

    func testTwoSyncsOfOneVaultAtOnceTakeTurns() async throws {
        let h = try await Household.start(["alice", "bob"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"], bob = h["bob"]
        try await alice.ok(["zone", "create", "household"])
        for i in 0..<12 { _ = try h.file("pair/p\(i).bin", size: 150_000, seed: UInt64(900 + i)) }
        try await alice.ok(["import", h.folder.file("files/pair"), "--zone", "household"])
        try await alice.ok(["share", "household", "bob", "--role", "read"])
        for member in [alice, bob] {
            let outputs = [h.folder.file("twin-a"), h.folder.file("twin-b")]
            let processes = try outputs.map { try CLI.start(["sync", "--json", "--vault", member.vault], output: $0) }
            var pushed = 0, pulled = 0
            for (process, output) in zip(processes, outputs) {
                let result = await CLI.wait(process, output: output)
                XCTAssertEqual(result.status, 0, result.stderr)
                pushed += (result.json as? [String: Any])?["pushed"] as? Int ?? -100
                pulled += (result.json as? [String: Any])?["pulled"] as? Int ?? -100
            }
            // Each change travelled once: the second sync found nothing left to do.
            XCTAssertEqual(pushed, member.name == "alice" ? 12 : 0)
            XCTAssertEqual(pulled, member.name == "alice" ? 0 : 12)
            XCTAssertEqual(try outbox(member), 0)
            try await assertClean(member)
        }
    }

    func testWipeWaitsForARunningSyncAndLeavesNoHalfVault() async throws {
        let h = try await Household.start(["alice", "bob"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"], bob = h["bob"]
        try await alice.ok(["zone", "create", "household"])
        for i in 0..<48 { _ = try h.file("wipe/w\(i).bin", size: 500_000, seed: UInt64(500 + i)) }
        try await alice.ok(["import", h.folder.file("files/wipe"), "--zone", "household"])
        try await alice.ok(["share", "household", "bob", "--role", "read"])
        _ = try await alice.sync()

        // Without --yes nothing happens.
        let refused = try await bob.run(["wipe"])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(FileSystem.exists(bob.vault + "/catalog.sqlite"))

        var interrupted = 0
        for round in 0..<3 {
            if round > 0 {
                try await bob.ok(["init", "--inline-threshold", "1024"])
                try await bob.ok(["remote", "set", h.server.url, "--account", "bob", "--token", bob.token])
            }
            let output = h.folder.file("sync-\(round)")
            let sync = try CLI.start(["sync", "--vault", bob.vault], output: output)
            // Wait until the sync holds its lock (it has started working), then wipe.
            for _ in 0..<200 where !FileSystem.exists(bob.vault + "/sync.lock") { try await Task.sleep(nanoseconds: 5_000_000) }
            try await Task.sleep(nanoseconds: UInt64(round * 40) * 1_000_000)
            let wipe = try await bob.run(["wipe", "--yes", "--json"])
            let synced = await CLI.wait(sync, output: output)
            XCTAssertEqual(wipe.status, 0, wipe.stderr)
            XCTAssertFalse(synced.signaled, "the sync died of a signal")
            XCTAssertTrue(synced.status == 0 || synced.stderr.contains("wiped"), synced.stderr)
            if synced.status != 0 { interrupted += 1 }
            XCTAssertFalse(FileSystem.exists(bob.vault), "the vault is still there")
            let leftovers = try FileSystem.contents(of: h.folder.path).filter { $0.contains("wiping") }
            XCTAssertEqual(leftovers, [])
        }

        XCTAssertGreaterThan(interrupted, 0, "no wipe caught a sync at work")

        // --remote deletes the account's own zones on the server too.
        try await alice.ok(["wipe", "--remote", "--yes"])
        checkEqual(try await h.raw.call(.GET, "/v1/zones", token: alice.token).text, #"{"zones":[]}"#)
        let bobZones = try JSONDecoder().decode(WireZoneList.self, from: Data(try await h.raw.call(.GET, "/v1/zones", token: bob.token).body))
        XCTAssertEqual(bobZones.zones.filter { $0.owner == "alice" }, [])
        checkEqual(try await h.raw.call(.GET, "/v1/zones/alice/household/changes", token: bob.token).status, 404)
        XCTAssertFalse(FileSystem.exists(alice.vault))
    }

    func testFsckRepairFetchesLostBlobsBackFromTheServer() async throws {
        let h = try await Household.start(["alice", "bob"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"], bob = h["bob"]
        let lost = try h.file("lost.jpg", size: 90_000, seed: 71)
        let spoiled = try h.file("spoiled.jpg", size: 80_000, seed: 72)
        try await alice.ok(["zone", "create", "household"])
        try await alice.ok(["import", lost.path, spoiled.path, "--zone", "household"])
        try await alice.ok(["share", "household", "bob", "--role", "read"])
        _ = try await alice.sync()
        _ = try await bob.sync()
        let store = BlobStore(root: bob.vault)
        try FileSystem.remove(store.path(for: BlobID(hex: lost.sha256)!))
        let spoiledPath = store.path(for: BlobID(hex: spoiled.sha256)!)
        let fd = try FileDescriptor.open(spoiledPath, O_WRONLY)
        try fd.write(Array("garbage".utf8))
        fd.close()
        let broken = try await bob.run(["fsck", "--json"])
        XCTAssertEqual(broken.status, 1, broken.stdout)
        let repaired = try await bob.run(["fsck", "--repair", "--json"])
        XCTAssertEqual(repaired.status, 0, repaired.stdout + repaired.stderr)
        let problems = (repaired.json as? [String: Any])?["problems"] as? [[String: Any]] ?? []
        XCTAssertEqual(Set(problems.compactMap { $0["sha256"] as? String }), [lost.sha256, spoiled.sha256])
        XCTAssertTrue(problems.allSatisfy { $0["repaired"] as? Bool == true }, "\(problems)")
        try await assertClean(bob)
        let copy = h.folder.file("restored")
        let vault = try Vault.open(at: bob.vault)
        try vault.copyBlob(try vault.blobRecord(lost.sha256), to: copy)
        try vault.close()
        XCTAssertEqual(try SHA256Hasher.hash(fileAt: copy).0.hex, lost.sha256)
    }

    func testZonesWipedOnTheServerAreRestoredByTheOwnersOtherVault() async throws {
        let h = try await Household.start(["alice", "bob"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"], bob = h["bob"]
        // alice's second machine: a vault of its own on the same account.
        let laptop = Member(name: "alice", token: alice.token, vault: h.folder.file("vault-alice-laptop"), folder: h.folder)
        try await laptop.ok(["init", "--inline-threshold", "1024"])
        try await laptop.ok(["remote", "set", h.server.url, "--account", "alice", "--token", alice.token])
        try await alice.ok(["zone", "create", "household"])
        for i in 0..<5 { _ = try h.file("restore/r\(i).bin", size: 3000 + i, seed: UInt64(300 + i)) }
        try await alice.ok(["import", h.folder.file("files/restore"), "--zone", "household"])
        try await alice.ok(["share", "household", "bob", "--role", "read"])
        _ = try await alice.sync()
        _ = try await laptop.sync()
        _ = try await bob.sync()
        checkEqual(try await laptop.receipts(zone: "household").count, 5)
        // The laptop wipes itself and the account's zones on the server.
        try await laptop.ok(["wipe", "--remote", "--yes"])
        checkEqual(try await h.raw.call(.GET, "/v1/zones", token: alice.token).text, #"{"zones":[]}"#)
        // alice's desktop still holds everything: its next sync puts the zones back (not shared any more).
        _ = try await alice.sync()
        checkEqual(try await alice.receipts(zone: "household").count, 5)
        let changes = try JSONDecoder().decode(WireChangesResponse.self,
                                               from: Data(try await h.raw.call(.GET, "/v1/zones/alice/household/changes", token: alice.token).body))
        XCTAssertEqual(changes.records.filter { !$0.deleted }.count, 5)
        // Shared again before bob syncs: his change token belongs to the old zone, so he drops his
        // copy and pulls the new zone from the start.
        try await alice.ok(["share", "household", "bob", "--role", "read"])
        _ = try await bob.sync()
        checkEqual(try await bob.receipts(zone: "alice/household").count, 5)
        try await assertClean(alice)
        try await assertClean(bob)
    }

    func testServerProcessStopsCleanlyOnSIGTERMAndRestartsWithItsData() async throws {
        let folder = TemporaryFolder("receipt-server")
        let data = folder.file("data")
        let added = try await CLI.run(["server", "account-add", "alice", "--data", data, "--json"], in: folder)
        XCTAssertEqual(added.status, 0, added.stderr)
        let token = (added.json as? [String: Any])?["token"] as? String ?? ""
        XCTAssertEqual(token.count, 64)
        XCTAssertEqual((added.json as? [String: Any])?["account"] as? String, "alice")
        let again = try await CLI.run(["server", "account-add", "alice", "--data", data], in: folder)
        XCTAssertNotEqual(again.status, 0)

        for round in 0..<2 {
            let output = folder.file("server-\(round)")
            let server = try CLI.start(["server", "run", "--data", data, "--listen", "127.0.0.1:0"], output: output)
            var port = 0
            for _ in 0..<400 where port == 0 {
                try await Task.sleep(nanoseconds: 10_000_000)
                let text = (try? String(contentsOfFile: output + ".err", encoding: .utf8)) ?? ""
                if let range = text.range(of: "127.0.0.1:") {
                    port = Int(text[range.upperBound...].prefix(while: { $0.isNumber })) ?? 0
                }
            }
            XCTAssertGreaterThan(port, 0, "the server did not say where it listens")
            let raw = Raw(base: "http://127.0.0.1:\(port)")
            let second = try await CLI.run(["server", "run", "--data", data, "--listen", "127.0.0.1:0"], in: folder)
            XCTAssertNotEqual(second.status, 0)
            XCTAssertTrue(second.stderr.contains("already running"), second.stderr)
            if round == 0 {
                checkEqual(try await raw.call(.PUT, "/v1/zones/alice/kept", token: token).status, 201)
            } else {
                let zones = try JSONDecoder().decode(WireZoneList.self, from: Data(try await raw.call(.GET, "/v1/zones", token: token).body))
                XCTAssertEqual(zones.zones, [WireZone(owner: "alice", name: "kept", role: .owner, shared: false)])
            }
            // An upload in flight when SIGTERM arrives still completes: stop accepting, finish, exit 0.
            let bytes = TestData.random(24 << 20, seed: UInt64(40 + round))
            let address = SHA256Hasher.hash(bytes).hex
            let (stream, source) = AsyncStream.makeStream(of: ByteBuffer.self)
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/blobs/\(address)")
            request.method = .PUT
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            request.body = .stream(stream, length: .known(Int64(bytes.count)))
            let upload = Task { try await HTTPClient.shared.execute(request, timeout: .seconds(60)).status.code }
            for (i, piece) in stride(from: 0, to: bytes.count, by: 1 << 20).enumerated() {
                source.yield(ByteBuffer(bytes: bytes[piece..<min(piece + (1 << 20), bytes.count)]))
                if i == 4 { kill(server.processIdentifier, SIGTERM) }
                try await Task.sleep(nanoseconds: 15_000_000)
            }
            source.finish()
            checkEqual(try await upload.value, 204)
            XCTAssertTrue(BlobStore(root: data).contains(BlobID(hex: address)!))
            let result = await CLI.wait(server, output: output)
            XCTAssertFalse(result.signaled)
            XCTAssertEqual(result.status, 0, result.stderr)
        }
    }
}
