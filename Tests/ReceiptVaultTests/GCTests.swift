import BlobStore
import Foundation
import GRDB
import ReceiptCatalog
@testable import ReceiptVault
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class GCTests: XCTestCase {
    func testGraceDurationsParseAndBadOnesAreRefusedWithExit2() throws {
        XCTAssertEqual(GraceDuration.seconds("0"), 0)
        XCTAssertEqual(GraceDuration.seconds("30s"), 30)
        XCTAssertEqual(GraceDuration.seconds("10m"), 600)
        XCTAssertEqual(GraceDuration.seconds("1h"), 3600)
        XCTAssertEqual(GraceDuration.seconds("2d"), 172_800)
        XCTAssertEqual(GraceDuration.seconds("45"), 45)
        for bad in ["", "h", "1x", "-1", "1.5h", "1h30m", "99999999999999d", " ", "1 h"] {
            XCTAssertNil(GraceDuration.seconds(bad), bad)
        }
        let dir = TemporaryFolder()
        _ = try Vault.create(at: dir.file("vault"))
        let result = try ReceiptBinary.run(["--vault", dir.file("vault"), "gc", "--grace", "soon"])
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.stderr.contains("invalid --grace 'soon'"), result.stderr)
        XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.stderr)
    }

    func testGCRemovesOnlyUnreferencedBlobsPastTheGrace() throws {
        let dir = TemporaryFolder()
        let (vault, report) = try Integrity.vault(in: dir, external: 3, inline: 2)
        let byPath = Dictionary(uniqueKeysWithValues: report.imported.map { ($0.path.split(separator: "/").last.map(String.init)!, $0) })
        let dropExternal = try XCTUnwrap(byPath["ext0.bin"]), dropInline = try XCTUnwrap(byPath["small0.txt"])
        try vault.remove([dropExternal.id.text, dropInline.id.text])

        // Fresh garbage is spared by the grace.
        var gc = try vault.collectGarbage(graceSeconds: 3600)
        XCTAssertEqual(gc.removedBlobs, 0)
        XCTAssertTrue(FileSystem.exists(Integrity.blobPath(vault.path, dropExternal.sha256)))

        // Past the grace: the file by its mtime, the inline row by its createdAt.
        Integrity.age(Integrity.blobPath(vault.path, dropExternal.sha256), secondsAgo: 7200)
        try vault.catalog.write { db in
            try db.execute(sql: "UPDATE blobs SET createdAt = createdAt - 7200000 WHERE sha256 = ?", arguments: [BlobID(hex: dropInline.sha256)])
        }
        gc = try vault.collectGarbage(graceSeconds: 3600)
        XCTAssertEqual(Set(gc.blobs.map(\.sha256)), [dropExternal.sha256, dropInline.sha256])
        XCTAssertEqual(gc.removedBlobs, 2)
        XCTAssertEqual(gc.reclaimedBytes, dropExternal.size + dropInline.size)
        XCTAssertFalse(FileSystem.exists(Integrity.blobPath(vault.path, dropExternal.sha256)))
        XCTAssertNil(try vault.catalog.read { try BlobRecord.fetchOne($0, key: BlobID(hex: dropExternal.sha256)) })
        XCTAssertNil(try vault.catalog.read { try BlobRecord.fetchOne($0, key: BlobID(hex: dropInline.sha256)) })

        // Everything still referenced is intact, even when old.
        for item in report.imported where item.id != dropExternal.id && item.id != dropInline.id {
            let path = Integrity.blobPath(vault.path, item.sha256)
            if FileSystem.exists(path) { Integrity.age(path, secondsAgo: 30 * 86_400) }
        }
        XCTAssertEqual(try vault.collectGarbage(graceSeconds: 0).removedBlobs, 0)
        for item in report.imported where item.id != dropExternal.id && item.id != dropInline.id {
            XCTAssertEqual(try vault.readBlob(vault.blobRecord(item.sha256)) { _ in }, item.size)
        }
    }

    func testDryRunShowsThePlanAndChangesNothing() throws {
        let dir = TemporaryFolder()
        let (vault, report) = try Integrity.vault(in: dir, external: 2)
        try vault.remove([report.imported[0].id.text])
        try dir.write("vault/interim/dead.interim", [1, 2, 3])
        let before = Integrity.snapshot(vault.path).filter { !$0.key.hasPrefix("catalog.sqlite") }
        let dry = try ReceiptBinary.run(["--vault", vault.path, "gc", "--dry-run", "--grace", "0", "--json"])
        XCTAssertEqual(dry.status, 0, dry.stderr)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: dry.stdoutData) as? [String: Any])
        XCTAssertEqual(json["dryRun"] as? Bool, true)
        XCTAssertEqual(json["removedBlobs"] as? Int, 1)
        XCTAssertEqual(json["removedInterim"] as? Int, 1)
        XCTAssertEqual((json["reclaimedBytes"] as? NSNumber)?.int64Value, report.imported[0].size + 3)
        XCTAssertEqual(Integrity.snapshot(vault.path).filter { !$0.key.hasPrefix("catalog.sqlite") }, before)
        XCTAssertNotNil(try vault.catalog.read { try BlobRecord.fetchOne($0, key: BlobID(hex: report.imported[0].sha256)) })

        let real = try ReceiptBinary.run(["--vault", vault.path, "gc", "--grace", "0", "--json"])
        XCTAssertEqual(real.status, 0, real.stderr)
        let done = try XCTUnwrap(JSONSerialization.jsonObject(with: real.stdoutData) as? [String: Any])
        XCTAssertEqual(done["dryRun"] as? Bool, false)
        XCTAssertEqual(done["removedBlobs"] as? Int, 1)
        XCTAssertFalse(FileSystem.exists(Integrity.blobPath(vault.path, report.imported[0].sha256)))
        XCTAssertFalse(FileSystem.exists(dir.file("vault/interim/dead.interim")))
    }

    func testStagingFilesAreRemovedOnlyWhenStaleAndOwnedByNobody() throws {
        let dir = TemporaryFolder()
        let (vault, _) = try Integrity.vault(in: dir, external: 0)
        let stale = try dir.write("vault/interim/stale.interim", [UInt8](repeating: 7, count: 100))
        let young = try dir.write("vault/interim/young.interim", [UInt8](repeating: 7, count: 100))
        let owned = try dir.write("vault/interim/owned.interim", [UInt8](repeating: 7, count: 100))
        Integrity.age(stale, secondsAgo: 7200)
        Integrity.age(owned, secondsAgo: 7200)
        let fd = open(owned, O_RDONLY)
        defer { close(fd) }
        XCTAssertEqual(flock(fd, LOCK_EX), 0)

        let gc = try vault.collectGarbage(graceSeconds: 3600)
        XCTAssertEqual(gc.interim.map(\.path), [stale])
        XCTAssertEqual(gc.removedInterim, 1)
        XCTAssertFalse(FileSystem.exists(stale))
        XCTAssertTrue(FileSystem.exists(young))
        XCTAssertTrue(FileSystem.exists(owned), "a staging file some process holds locked is never removed")
    }

    func testOrphanFilesAreSweptButFilesOlderThanTheCatalogAreKept() throws {
        let dir = TemporaryFolder()
        let (vault, _) = try Integrity.vault(in: dir, external: 0)
        // An import killed between install and commit leaves a file no row records.
        let crashLeft = try vault.blobs.write(bytes: TestData.random(200_000, seed: 77), compression: .none)
        // A file older than the catalog itself was described by a catalog that is gone: never deleted.
        let predates = try vault.blobs.write(bytes: TestData.random(200_000, seed: 78), compression: .none)
        Integrity.age(Integrity.blobPath(vault.path, predates.id.hex), secondsAgo: 400 * 86_400)

        let gc = try vault.collectGarbage(graceSeconds: 0)
        XCTAssertEqual(gc.blobs.map(\.sha256), [crashLeft.id.hex])
        XCTAssertEqual(gc.keptOlderThanCatalog, [predates.id.hex])
        XCTAssertFalse(vault.blobs.contains(crashLeft.id))
        XCTAssertTrue(vault.blobs.contains(predates.id))
    }

    /// The dedup race git guards against with mtimes: an import whose content is an old, unreferenced
    /// blob reuses it (install drops its staging file and refreshes the mtime) and only later commits
    /// its reference. gc must not delete the blob in between: the shared vault lock keeps gc out, and
    /// the refreshed mtime keeps the blob inside any grace.
    func testDedupHitOnOldUnreferencedBlobIsNotSweptBeforeItsReferenceCommits() throws {
        let dir = TemporaryFolder()
        let (vault, report) = try Integrity.vault(in: dir, external: 1)
        let item = report.imported[0]
        let blobPath = Integrity.blobPath(vault.path, item.sha256)
        try vault.remove([item.id.text])
        Integrity.age(blobPath, secondsAgo: 90 * 86_400)
        let input = dir.file("in/ext0.bin")

        // 1. The grace: a dedup hit refreshes the mtime, so a gc with the default grace spares it.
        let staged = try FileDescriptor.with(input, O_RDONLY) { try vault.blobs.stage(from: $0, compression: .auto) }
        let installed = try vault.blobs.install([staged])
        XCTAssertTrue(installed[0].deduplicated)
        XCTAssertGreaterThan(Integrity.mtime(blobPath), (Int64(Date().timeIntervalSince1970) - 60) * 1_000_000_000)
        XCTAssertEqual(try vault.collectGarbage(graceSeconds: 3600).removedBlobs, 0)
        XCTAssertTrue(FileSystem.exists(blobPath))

        // 2. The lock, with no grace at all: a gc in another process waits until the reference commits.
        Integrity.age(blobPath, secondsAgo: 90 * 86_400)
        let gcOut = dir.file("gc.json")
        var gcProcess: Process?
        try vault.locked(.shared) {
            let staged = try FileDescriptor.with(input, O_RDONLY) { try vault.blobs.stage(from: $0, compression: .auto) }
            XCTAssertTrue(try vault.blobs.install([staged])[0].deduplicated)
            let process = try Integrity.start(["--vault", vault.path, "gc", "--grace", "0", "--json"], stdout: gcOut)
            gcProcess = process
            XCTAssertFalse(Integrity.wait(process, seconds: 1.0), "gc ran while an import held the shared lock")
            XCTAssertTrue(FileSystem.exists(blobPath))
            // The import's commit: its receipt now refers to the blob.
            try vault.catalog.transaction { w in
                let receipt = Receipt(id: ReceiptID.generate(), zone: Zone.personal, createdAt: w.now, modifiedAt: w.now)
                try w.addReceipt(receipt)
                _ = try w.insertAttachment(receiptID: receipt.id, blob: BlobID(hex: item.sha256)!, size: item.size, filename: "ext0.bin",
                                           mediaType: "application/octet-stream", position: 0)
            }
        }
        let process = try XCTUnwrap(gcProcess)
        XCTAssertTrue(Integrity.wait(process, seconds: 30))
        XCTAssertEqual(process.terminationStatus, 0)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: gcOut))) as? [String: Any])
        XCTAssertEqual(json["removedBlobs"] as? Int, 0)
        XCTAssertTrue(FileSystem.exists(blobPath))
        XCTAssertEqual(try vault.readBlob(vault.blobRecord(item.sha256)) { _ in }, item.size)

        // Control: without a reference, the same gc does delete it (the test above can fail).
        try vault.catalog.write { db in try db.execute(sql: "DELETE FROM attachments") }
        XCTAssertEqual(try vault.collectGarbage(graceSeconds: 0).removedBlobs, 1)
        XCTAssertFalse(FileSystem.exists(blobPath))
    }

    /// Import and gc loops in separate processes, gc with no grace: every import that reported
    /// success has its blob, right after and at the end, and fsck finds nothing corrupt or missing.
    func testConcurrentImportAndGCProcessesNeverLoseACommittedBlob() async throws {
        let dir = TemporaryFolder()
        let (vault, _) = try Integrity.vault(in: dir, external: 0)
        try vault.close()
        for i in 0..<6 { try dir.write("pool/f\(i).bin", TestData.random(150_000 + i, seed: UInt64(100 + i))) }
        for i in 0..<4 { try dir.write("pool/s\(i).txt", TestData.text(2000 + i, seed: i)) }
        let script = """
            set -u
            V="$VAULT"; fails=0
            for i in $(seq 1 40); do
              f=$(ls "$POOL" | sed -n "$(( (i % 10) + 1 ))p")
              out=$("$RECEIPT" --vault "$V" import "$POOL/$f" --json) || { echo "import $i failed"; fails=$((fails+1)); continue; }
              id=$(printf '%s' "$out" | grep -o '"id" : "[^"]*"' | head -1 | cut -d'"' -f4)
              sha=$(printf '%s' "$out" | grep -o '"sha256" : "[^"]*"' | head -1 | cut -d'"' -f4)
              "$RECEIPT" --vault "$V" cat "$sha" > /dev/null || { echo "blob $sha of committed receipt $id is gone"; fails=$((fails+1)); }
              if [ $((i % 2)) -eq 0 ]; then "$RECEIPT" --vault "$V" rm "$id" > /dev/null 2>&1; fi
            done
            exit $fails
            """
        let gcProcess = Process()
        gcProcess.executableURL = URL(fileURLWithPath: "/bin/bash")
        var env = ProcessInfo.processInfo.environment
        env["RECEIPT"] = try Integrity.binary()
        env["VAULT"] = dir.file("vault")
        env["POOL"] = dir.file("pool")
        gcProcess.environment = env
        gcProcess.arguments = ["-c", """
            n=0; while [ ! -e "$STOP" ]; do "$RECEIPT" --vault "$VAULT" gc --grace 0 >/dev/null || exit 1; n=$((n+1)); done; echo $n > "$STOP.count"
            """]
        gcProcess.environment?["STOP"] = dir.file("stop")
        gcProcess.standardOutput = FileHandle.nullDevice
        try gcProcess.run()
        let imports = try Integrity.bash(script, environment: ["VAULT": dir.file("vault"), "POOL": dir.file("pool")])
        _ = FileManager.default.createFile(atPath: dir.file("stop"), contents: nil)
        XCTAssertTrue(Integrity.wait(gcProcess, seconds: 60))
        XCTAssertEqual(gcProcess.terminationStatus, 0, "a gc run failed")
        XCTAssertEqual(imports.status, 0, imports.output)
        let gcRuns = Int((try? String(contentsOfFile: dir.file("stop.count"), encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
        XCTAssertGreaterThan(gcRuns, 3, "gc did not run alongside the imports")

        let reopened = try Vault.open(at: dir.file("vault"))
        defer { try? reopened.close() }
        let receipts = try reopened.list()
        XCTAssertGreaterThan(receipts.count, 0)
        for r in receipts { for a in r.attachments { XCTAssertEqual(try reopened.readBlob(reopened.blobRecord(a.sha256)) { _ in }, a.size) } }
        let fsck = try await Integrity.fsck(dir.file("vault"))
        XCTAssertEqual(Integrity.problems(fsck, .corruptBlob, .missingBlob), [])
    }

    /// A gc killed while it holds the exclusive lock: the kernel drops the flock, the next gc runs.
    func testGCKilledWhileHoldingItsLockDoesNotBlockTheNext() throws {
        let dir = TemporaryFolder()
        let (vault, _) = try Integrity.vault(in: dir, external: 0)
        let lockPath = vault.path + "/lock"
        var caught = false
        for attempt in 0..<4 where !caught {
            // Plenty of garbage so gc holds the lock long enough to be caught holding it.
            for i in 0..<(1500 << attempt) {
                _ = try vault.blobs.write(bytes: TestData.random(64, seed: UInt64(attempt * 100_000 + i)), compression: .none)
            }
            let inode = try XCTUnwrap(try FileSystem.status(lockPath)).inode
            let gc = try Integrity.start(["--vault", vault.path, "gc", "--grace", "0"])
            let deadline = Date().addingTimeInterval(20)
            while gc.isRunning && Date() < deadline {
                if Self.holdsExclusiveFlock(pid: gc.processIdentifier, inode: inode) {
                    kill(gc.processIdentifier, SIGKILL)
                    caught = true
                    break
                }
                usleep(500)
            }
            gc.waitUntilExit()
            if caught { XCTAssertEqual(gc.terminationReason, .uncaughtSignal) }
        }
        XCTAssertTrue(caught, "never caught gc holding the vault lock")
        let next = try Integrity.start(["--vault", vault.path, "gc", "--grace", "0"])
        XCTAssertTrue(Integrity.wait(next, seconds: 30), "the next gc is blocked")
        XCTAssertEqual(next.terminationStatus, 0)
        let importer = try Integrity.start(["--vault", vault.path, "import", try dir.write("in/after.bin", TestData.random(200_000, seed: 9))])
        XCTAssertTrue(Integrity.wait(importer, seconds: 30), "an import is blocked")
        XCTAssertEqual(importer.terminationStatus, 0)
    }

    /// True when /proc/locks shows `pid` holding an exclusive (WRITE) flock on the inode.
    static func holdsExclusiveFlock(pid: Int32, inode: UInt64) -> Bool {
        guard let text = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) else { return false }
        for line in text.split(separator: "\n") {
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            // 1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF
            guard f.count >= 6, f[1] == "FLOCK", f[3] == "WRITE", f[4] == Substring(String(pid)) else { continue }
            if f[5].split(separator: ":").last == Substring(String(inode)) { return true }
        }
        return false
    }
}
