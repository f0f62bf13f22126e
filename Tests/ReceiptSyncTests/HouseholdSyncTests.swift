import BlobStore
import Foundation
import GRDB
import ReceiptCatalog
import ReceiptSync
@testable import ReceiptVault
import ReceiptWire
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// A household through the CLI: owner alice, write participant bob, read participant carol,
/// outsider mallory, each with a vault of their own, against a real server.
class HouseholdSyncTests: HouseholdTestCase {
    /// Runs `sql` (with the receipt id as its argument) and queues the receipt's outbox entry, in
    /// one transaction, as no command would.
    func changeBehindTheVaultsBack(_ member: Member, _ id: String, zone: String, sql: String) throws {
        let vault = try Vault.open(at: member.vault)
        defer { try? vault.close() }
        try vault.catalog.write { db in
            try db.execute(sql: sql, arguments: [ReceiptID(id)])
            var change = Change(receiptID: try XCTUnwrap(ReceiptID(id)), zone: zone, kind: .upsert, at: nowMillis())
            try change.insert(db)
        }
    }

    func testReceiptsAndBytesReachParticipantsAndFlowBack() async throws {
        let h = try await Household.start(["alice", "bob", "carol", "mallory"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"], bob = h["bob"], carol = h["carol"], mallory = h["mallory"]
        let big = try h.file("scan.jpg", size: 200_000, seed: 1)
        let small = try h.file("note.txt", size: 300, seed: 2)
        let privateFile = try h.file("private.pdf", size: 5000, seed: 3)
        try await alice.ok(["zone", "create", "household"])
        let r1 = importedID(try await alice.ok(["import", big.path, "--zone", "household", "--merchant", "Grocer",
                                                "--total", "12.34", "--date", "2024-05-01", "--json"]))
        let r2 = importedID(try await alice.ok(["import", small.path, "--zone", "household", "--merchant", "Bakery", "--json"]))
        // A compressible attachment is stored xz-compressed and must travel as its original bytes.
        let text = Array(String(repeating: "2024-05-01 Bakery sourdough 4.20 EUR\n", count: 3000).utf8)
        let textPath = try h.folder.write("files/ledger.txt", text)
        let textSHA = SHA256Hasher.hash(text).hex
        try await alice.ok(["attach", r2, textPath])
        let aliceVault = try Vault.open(at: alice.vault)
        XCTAssertEqual(try aliceVault.blobRecord(textSHA).encoding, .xz)
        try aliceVault.close()
        let mine = importedID(try await alice.ok(["import", privateFile.path, "--json"]))
        try await alice.ok(["share", "household", "bob", "--role", "write"])
        try await alice.ok(["share", "household", "carol", "--role", "read"])
        let pushed = try await alice.sync()
        XCTAssertEqual(pushed["pushed"] as? Int, 3)
        XCTAssertEqual(pushed["blobsUploaded"] as? Int, 4)
        XCTAssertEqual(pushed["conflicts"] as? Int, 0)

        for member in [bob, carol, mallory] { _ = try await member.sync() }
        // Participants see the zone as OWNER/NAME with their role; the outsider does not.
        let bobZones = try await bob.zones()
        XCTAssertTrue(bobZones.contains { $0["zone"] as? String == "alice/household" && $0["role"] as? String == "write"
            && $0["owner"] as? String == "alice" && $0["shared"] as? Bool == true }, "\(bobZones)")
        checkTrue(try await carol.zones().contains { $0["zone"] as? String == "alice/household" && $0["role"] as? String == "read" })
        checkEqual(try await mallory.zones().map { $0["zone"] as? String }, ["personal"])
        checkTrue(try await alice.zones().contains { $0["zone"] as? String == "household" && $0["role"] as? String == "owner"
            && $0["owner"] as? String == "alice" && $0["shared"] as? Bool == true })

        // The receipts and their bytes arrived; alice's personal zone did not travel.
        let bobs = try await bob.receipts()
        XCTAssertEqual(Set(bobs.keys), [r1, r2])
        XCTAssertEqual(bobs[r1]?["merchant"] as? String, "Grocer")
        XCTAssertEqual(bobs[r1]?["total"] as? String, "12.34")
        XCTAssertEqual(bobs[r1]?["zone"] as? String, "alice/household")
        checkEqual(Set(try await carol.receipts().keys), [r1, r2])
        checkTrue(try await mallory.receipts().isEmpty)
        for (file, member) in [(big, bob), (small, bob), (big, carol), ((path: textPath, sha256: textSHA), bob)] {
            // `cat` fails unless the bytes it wrote hash to the address.
            try await member.ok(["cat", file.sha256])
            let copy = h.folder.file("copy-" + SecureRandom.hex(4))
            let vault = try Vault.open(at: member.vault)
            try vault.copyBlob(try vault.blobRecord(file.sha256), to: copy)
            XCTAssertEqual(try SHA256Hasher.hash(fileAt: copy).0.hex, file.sha256)
        }
        XCTAssertNil(bobs[mine])
        // Probing by hash gives the outsider nothing.
        checkEqual(try await h.raw.call(.GET, "/v1/blobs/\(big.sha256)", token: mallory.token).status, 404)
        checkEqual(try await h.raw.call(.GET, "/v1/blobs/\(privateFile.sha256)", token: bob.token).status, 404)

        // The write participant adds and edits; it flows back to the owner and to the reader.
        let bobFile = try h.file("bob.png", size: 150_000, seed: 4)
        let r3 = importedID(try await bob.ok(["import", bobFile.path, "--zone", "alice/household", "--merchant", "Hardware", "--json"]))
        try await bob.ok(["edit", r2, "--note", "paid cash"])
        let bobSync = try await bob.sync()
        XCTAssertEqual(bobSync["pushed"] as? Int, 2)
        XCTAssertEqual(bobSync["blobsUploaded"] as? Int, 1)
        _ = try await alice.sync()
        _ = try await carol.sync()
        let alices = try await alice.receipts(zone: "household")
        XCTAssertEqual(Set(alices.keys), [r1, r2, r3])
        XCTAssertEqual(alices[r2]?["note"] as? String, "paid cash")
        XCTAssertEqual(alices[r3]?["zone"] as? String, "household")
        let aliceAgain = try Vault.open(at: alice.vault)
        let fromBob = h.folder.file("from-bob")
        try aliceAgain.copyBlob(try aliceAgain.blobRecord(bobFile.sha256), to: fromBob)
        try aliceAgain.close()
        XCTAssertEqual(try SHA256Hasher.hash(fileAt: fromBob).0.hex, bobFile.sha256)
        checkEqual(Set(try await carol.receipts().keys), [r1, r2, r3])

        // The read participant cannot change the zone: refused locally, and refused by the server
        // when a change reaches it anyway (queued here behind the vault's back).
        let refusedEdit = try await carol.run(["edit", r1, "--merchant", "Nope"])
        XCTAssertNotEqual(refusedEdit.status, 0)
        try changeBehindTheVaultsBack(carol, r1, zone: "alice/household", sql: "UPDATE receipts SET merchant = 'Sneaky' WHERE id = ?")
        let carolPush = try await carol.run(["sync", "--json"])
        XCTAssertEqual(carolPush.status, 1)
        XCTAssertTrue(carolPush.stderr.contains("read-only"), carolPush.stderr)
        _ = try await alice.sync()
        checkEqual(try await alice.receipts(zone: "household")[r1]?["merchant"] as? String, "Grocer")

        // Unshare: bob's next sync drops the zone, and the server answers him as a stranger.
        try await alice.ok(["unshare", "household", "bob"])
        _ = try await bob.sync()
        checkFalse(try await bob.zones().contains { $0["zone"] as? String == "alice/household" })
        checkTrue(try await bob.receipts().isEmpty)
        checkEqual(try await h.raw.call(.GET, "/v1/blobs/\(big.sha256)", token: bob.token).status, 404)
        checkEqual(try await h.raw.call(.GET, "/v1/zones/alice/household/changes", token: bob.token).status, 404)
        // bob uploaded bob.png himself, but no zone he can read references it any more.
        checkEqual(try await h.raw.call(.GET, "/v1/blobs/\(bobFile.sha256)", token: bob.token).status, 404)
        checkTrue(try await alice.zones().contains { $0["zone"] as? String == "household" && $0["shared"] as? Bool == true })
    }

    func testDeletesPropagateAndTheirBlobsBecomeGarbage() async throws {
        let h = try await Household.start(["alice", "bob"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"], bob = h["bob"]
        let file = try h.file("gone.jpg", size: 120_000, seed: 11)
        let keep = try h.file("keep.jpg", size: 130_000, seed: 12)
        try await alice.ok(["zone", "create", "household"])
        let doomed = importedID(try await alice.ok(["import", file.path, "--zone", "household", "--json"]))
        let kept = importedID(try await alice.ok(["import", keep.path, "--zone", "household", "--json"]))
        try await alice.ok(["share", "household", "bob", "--role", "write"])
        _ = try await alice.sync()
        _ = try await bob.sync()
        checkEqual(Set(try await bob.receipts().keys), [doomed, kept])

        try await bob.ok(["rm", doomed])
        checkEqual(try await bob.sync()["pushed"] as? Int, 1)
        let pulled = try await alice.sync()
        XCTAssertEqual(pulled["pulled"] as? Int, 1)
        checkEqual(Set(try await alice.receipts().keys), [kept])
        // Nothing references the blob any more on either side: it is garbage, and gc reclaims it.
        for member in [alice, bob] {
            let vault = try Vault.open(at: member.vault)
            let refs = try vault.catalog.read { db in
                try Int.fetchOne(db, sql: "SELECT count(*) FROM attachments WHERE sha256 = ?", arguments: [BlobID(hex: file.sha256)]) ?? -1
            }
            XCTAssertEqual(refs, 0)
            try vault.close()
            let gc = try await member.ok(["gc", "--grace", "0", "--json"])
            XCTAssertEqual((gc.json as? [String: Any])?["removedBlobs"] as? Int, 1, gc.stdout)
            XCTAssertFalse(BlobStore(root: member.vault).contains(BlobID(hex: file.sha256)!), "gc left the blob")
            XCTAssertTrue(BlobStore(root: member.vault).contains(BlobID(hex: keep.sha256)!), "gc took a live blob")
        }
        // The server no longer serves the deleted receipt's blob to anyone.
        checkEqual(try await h.raw.call(.GET, "/v1/blobs/\(file.sha256)", token: alice.token).status, 404)
        checkEqual(try await h.raw.call(.GET, "/v1/blobs/\(keep.sha256)", token: bob.token).status, 200)
    }

    func testConcurrentEditsConvergeAfterEachSyncsTwice() async throws {
        let h = try await Household.start(["alice", "bob"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"], bob = h["bob"]
        try await alice.ok(["zone", "create", "household"])
        let f1 = try h.file("one.jpg", size: 2000, seed: 21)
        let f2 = try h.file("two.jpg", size: 3000, seed: 22)
        let f3 = try h.file("three.jpg", size: 4000, seed: 23)
        let both = importedID(try await alice.ok(["import", f1.path, "--zone", "household", "--merchant", "Shop", "--json"]))
        let contested = importedID(try await alice.ok(["import", f2.path, "--zone", "household", "--merchant", "Cafe", "--json"]))
        try await alice.ok(["share", "household", "bob", "--role", "write"])
        _ = try await alice.sync()
        _ = try await bob.sync()

        // Offline, each edits: different fields of one receipt, the same field of it, and one deletes
        // a receipt the other edits. bob also attaches a file to the first one.
        try await alice.ok(["edit", both, "--merchant", "Shop & Co", "--total", "9.99", "--status", "submitted", "--claim", "HSA-1"])
        try await bob.ok(["edit", both, "--note", "bob's note", "--total", "10.01", "--reimbursed-on", "2025-04-02"])
        try await bob.ok(["attach", both, f3.path])
        try await alice.ok(["rm", contested])
        try await bob.ok(["edit", contested, "--category", "food"])

        for member in [alice, bob, alice, bob] { _ = try await member.sync() }
        let a = try await alice.receipts(zone: "household")
        let b = try await bob.receipts(zone: "alice/household")
        XCTAssertEqual(Set(a.keys), [both, contested])
        XCTAssertEqual(Set(b.keys), [both, contested])
        for id in [both, contested] {
            for key in ["merchant", "total", "note", "category", "date", "currency", "tags", "status", "claim", "reimbursedOn"] {
                XCTAssertEqual("\(a[id]?[key] ?? "nil")", "\(b[id]?[key] ?? "nil")", "\(id) \(key)")
            }
            let aFiles = (a[id]?["attachments"] as? [[String: Any]] ?? []).compactMap { $0["sha256"] as? String }
            let bFiles = (b[id]?["attachments"] as? [[String: Any]] ?? []).compactMap { $0["sha256"] as? String }
            XCTAssertEqual(aFiles, bFiles)
        }
        XCTAssertEqual(a[both]?["merchant"] as? String, "Shop & Co")
        XCTAssertEqual(a[both]?["note"] as? String, "bob's note")
        XCTAssertEqual(a[both]?["total"] as? String, "10.01") // bob edited it last
        // The claim fields travel and merge field by field like the rest.
        XCTAssertEqual(b[both]?["status"] as? String, "submitted")
        XCTAssertEqual(b[both]?["claim"] as? String, "HSA-1")
        XCTAssertEqual(a[both]?["reimbursedOn"] as? String, "2025-04-02")
        XCTAssertEqual(Set((a[both]?["attachments"] as? [[String: Any]] ?? []).compactMap { $0["sha256"] as? String }),
                       [f1.sha256, f3.sha256])
        XCTAssertEqual(a[contested]?["category"] as? String, "food") // the edit beat the delete
        // Nothing is left to push on either side.
        for member in [alice, bob] {
            let again = try await member.sync()
            XCTAssertEqual(again["pushed"] as? Int, 0)
            XCTAssertEqual(again["pulled"] as? Int, 0)
        }
    }

    func testAReceiptMovedBetweenZonesMovesForEveryMember() async throws {
        let h = try await Household.start(["alice", "bob"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"], bob = h["bob"]
        let file = try h.file("move/scan.jpg", size: 5000, seed: 81)
        for zone in ["household", "taxes"] {
            try await alice.ok(["zone", "create", zone])
            try await alice.ok(["share", zone, "bob", "--role", "write"])
        }
        let id = importedID(try await alice.ok(["import", file.path, "--zone", "household", "--merchant", "Shop", "--json"]))
        _ = try await alice.sync()
        _ = try await bob.sync()
        checkEqual(try await bob.receipts()[id]?["zone"] as? String, "alice/household")
        // No command moves a receipt yet; the catalog can (a move is one update and its outbox entry).
        try changeBehindTheVaultsBack(alice, id, zone: "taxes", sql: "UPDATE receipts SET zone = 'taxes' WHERE id = ?")
        checkEqual(try await alice.receipts()[id]?["zone"] as? String, "taxes")
        _ = try await alice.sync()
        _ = try await bob.sync()
        checkEqual(try await bob.receipts()[id]?["zone"] as? String, "alice/taxes")
        checkEqual(try await bob.receipts(zone: "alice/household").count, 0)
        // The server agrees: the former zone holds only a tombstone.
        let old = try JSONDecoder().decode(WireChangesResponse.self,
                                           from: Data(try await h.raw.call(.GET, "/v1/zones/alice/household/changes", token: bob.token).body))
        XCTAssertEqual(old.records.map(\.deleted), [true])
        for member in [alice, bob] {
            let again = try await member.sync()
            XCTAssertEqual(again["pushed"] as? Int, 0)
            XCTAssertEqual(again["pulled"] as? Int, 0)
            XCTAssertEqual((again["errors"] as? [Any])?.count, 0)
        }
        checkEqual(try await alice.receipts()[id]?["zone"] as? String, "taxes")
    }

    func testRemoteSetKeepsTheTokenPrivateAndRefusesNonsense() async throws {
        let h = try await Household.start(["alice"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"]
        let st = try FileSystem.status(alice.vault + "/remote.token")
        XCTAssertEqual((st?.mode ?? 0) & 0o777, 0o600)
        checkNotEqual(try await alice.run(["remote", "set", "ftp://x", "--account", "alice", "--token", alice.token]).status, 0)
        checkNotEqual(try await alice.run(["remote", "set", h.server.url, "--account", "alice", "--token", "short"]).status, 0)
        checkNotEqual(try await alice.run(["remote", "set", h.server.url, "--account", "../x", "--token", alice.token]).status, 0)
        // A wrong token is refused by the server with a sentence, and nothing changes.
        try await alice.ok(["remote", "set", h.server.url, "--account", "alice", "--token", String(repeating: "a", count: 64)])
        let refused = try await alice.run(["sync"])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.stderr.contains("refused this vault's token"), refused.stderr)
        XCTAssertEqual(refused.stderr.split(separator: "\n").count, 1)
        checkNotEqual(try await alice.run(["zone", "create", "a/b"]).status, 0)
        checkNotEqual(try await alice.run(["zone", "create", "personal"]).status, 0)
    }

    /// Blobs travel in bundles, and one blob whose bytes this vault cannot provide does not hold back
    /// the others of its bundle: a blob file cut short is left out before sending, one whose bytes
    /// were flipped is refused by the server and the rest of its bundle is sent again without it.
    func testABadBlobInTheVaultIsReportedAndTheRestOfItsBundleStillUploads() async throws {
        let h = try await Household.start(["alice"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"]
        let cut = try h.file("cut.jpg", size: 200_000, seed: 41)
        let flipped = try h.file("flipped.jpg", size: 150_000, seed: 42)
        let fine = try h.file("fine.jpg", size: 120_000, seed: 43)
        let small = try h.file("small.txt", size: 3_000, seed: 44)
        for file in [cut, flipped, fine, small] { try await alice.ok(["import", file.path]) }
        let store = BlobStore(root: alice.vault)
        checkEqual(truncate(store.path(for: try XCTUnwrap(BlobID(hex: cut.sha256))), 1000), 0)
        let flippedPath = store.path(for: try XCTUnwrap(BlobID(hex: flipped.sha256)))
        var bytes = try XCTUnwrap(FileManager.default.contents(atPath: flippedPath))
        bytes[70_000] ^= 0x08
        try bytes.write(to: URL(fileURLWithPath: flippedPath))

        let r = try await alice.run(["sync", "--json"])
        XCTAssertNotEqual(r.status, 0)
        XCTAssertTrue(r.stderr.contains(cut.sha256) && r.stderr.contains("receipt fsck"), r.stderr)
        XCTAssertTrue(r.stdout.contains(flipped.sha256) || r.stderr.contains(flipped.sha256), r.stdout + r.stderr)
        let report = r.json as? [String: Any] ?? [:]
        XCTAssertEqual(report["blobsUploaded"] as? Int, 2, "\(report)")
        let server = BlobStore(root: h.server.data)
        for file in [fine, small] { XCTAssertTrue(server.contains(try XCTUnwrap(BlobID(hex: file.sha256))), file.path) }
        for file in [cut, flipped] { XCTAssertFalse(server.contains(try XCTUnwrap(BlobID(hex: file.sha256))), file.path) }
        XCTAssertEqual(try server.interimFiles().count, 0)
    }

    /// A pull fetches the next page and its blobs while the current page commits: with pages of two
    /// records, every receipt arrives, each blob is downloaded once even when receipts on consecutive
    /// pages share it, and the vault is whole afterwards.
    func testAPullInSmallPagesFetchedAheadGetsEverythingOnce() async throws {
        let h = try await Household.start(["alice"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"]
        let shared = try h.file("shared.pdf", size: 150_000, seed: 61)
        var ids: [String] = []
        for i in 0..<7 {
            let own = try h.file("receipt-\(i).jpg", size: i % 2 == 0 ? 700 : 40_000 + i, seed: 70 + UInt64(i))
            ids.append(importedID(try await alice.ok(["import", own.path, "--json"])))
        }
        for id in ids[2...4] { try await alice.ok(["attach", id, shared.path]) }
        _ = try await alice.sync()

        let second = Member(name: "alice", token: alice.token, vault: h.folder.file("vault-alice-2"), folder: h.folder)
        try await second.ok(["init", "--inline-threshold", "1024"])
        try await second.ok(["remote", "set", h.server.url, "--account", "alice", "--token", alice.token])
        let vault = try Vault.open(at: second.vault)
        let remote = try XCTUnwrap(try RemoteConfig.load(vault))
        let engine = try SyncEngine(vault: vault, remote: remote)
        engine.pageSize = 2
        let report = try await engine.run()
        try vault.close()
        XCTAssertEqual(report.pulled, 7)
        XCTAssertEqual(report.blobsDownloaded, 8, "7 own files and the shared one, each once")
        XCTAssertEqual(report.errors, [])
        let received = try await second.receipts()
        XCTAssertEqual(Set(received.keys), Set(ids))
        try await second.ok(["fsck"])
        let interim = try BlobStore(root: second.vault).interimFiles()
        XCTAssertEqual(interim.count, 0)
    }
}
