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

final class FsckTests: XCTestCase {
    // MARK: - Checking

    func testCleanVaultIsOkWithTheContractsJSONShape() async throws {
        let dir = TemporaryFolder()
        let (vault, report) = try Integrity.vault(in: dir, external: 3, inline: 2)
        try vault.close()
        let result = try ReceiptBinary.run(["--vault", dir.file("vault"), "fsck", "--json"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: result.stdoutData) as? [String: Any])
        XCTAssertEqual(json["ok"] as? Bool, true)
        XCTAssertEqual(json["checkedBlobs"] as? Int, 5)
        XCTAssertEqual((json["checkedBytes"] as? NSNumber)?.int64Value, report.imported.reduce(0) { $0 + $1.size })
        XCTAssertEqual((json["problems"] as? [Any])?.count, 0)
        let quick = try ReceiptBinary.run(["--vault", dir.file("vault"), "fsck", "--quick"])
        XCTAssertEqual(quick.status, 0, quick.stderr)
    }

    func testEveryProblemIsReportedWithTheReceiptsItAffectsAndExit1() async throws {
        let dir = TemporaryFolder()
        let (vault, report) = try Integrity.vault(in: dir, external: 4, inline: 1)
        let external = report.imported.filter { $0.size > 100_000 }
        let corrupt = external[0], missing = external[1]
        // The same corrupt blob in a second receipt: the problem names both.
        let second = try vault.importFiles([dir.file("in/ext0.bin")], zone: Zone.personal,
                                           metadata: ReceiptMetadata(merchant: "again")).imported[0]
        try Self.flipByte(Integrity.blobPath(vault.path, corrupt.sha256), at: 5000)
        try FileSystem.remove(Integrity.blobPath(vault.path, missing.sha256))
        let orphan = try vault.blobs.write(bytes: TestData.random(120_000, seed: 5), compression: .none)
        try dir.write("vault/blobs/notes.txt", "stray")
        try dir.write("vault/interim/left.interim", [1, 2, 3])
        try vault.close()

        let result = try ReceiptBinary.run(["--vault", dir.file("vault"), "fsck", "--json"])
        XCTAssertEqual(result.status, 1, result.stderr)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: result.stdoutData) as? [String: Any])
        XCTAssertEqual(json["ok"] as? Bool, false)
        let problems = try XCTUnwrap(json["problems"] as? [[String: Any]])
        for p in problems {
            XCTAssertEqual(Set(p.keys).intersection(["kind", "sha256", "receipt", "path", "detail", "repaired"]).count, 6, "\(p)")
        }
        func find(_ kind: String) -> [[String: Any]] { problems.filter { $0["kind"] as? String == kind } }
        let c = try XCTUnwrap(find("corrupt-blob").first)
        XCTAssertEqual(c["sha256"] as? String, corrupt.sha256)
        XCTAssertEqual(Set(c["receipts"] as? [String] ?? []), [corrupt.id.text, second.id.text])
        XCTAssertNotNil(c["receipt"] as? String)
        let m = try XCTUnwrap(find("missing-blob").first)
        XCTAssertEqual(m["sha256"] as? String, missing.sha256)
        XCTAssertEqual(m["receipt"] as? String, missing.id.text)
        XCTAssertEqual(find("orphan-blob").first?["sha256"] as? String, orphan.id.hex)
        XCTAssertEqual(find("unknown-file").first?["path"] as? String, dir.file("vault/blobs/notes.txt"))
        XCTAssertEqual(find("stale-interim").first?["path"] as? String, dir.file("vault/interim/left.interim"))
        // The two stray files were written readable by others (the test's umask): that is reported too.
        XCTAssertTrue((find("permissions").first?["detail"] as? String ?? "").contains("2 file(s)"), "\(problems)")
        XCTAssertEqual(problems.count, 6, "\(problems)")

        // Text output: one line per problem, the summary on stderr.
        let text = try ReceiptBinary.run(["--vault", dir.file("vault"), "fsck"])
        XCTAssertEqual(text.status, 1)
        XCTAssertEqual(text.stdout.split(separator: "\n").count, 6, text.stdout)
        XCTAssertTrue(text.stdout.contains(corrupt.id.text), text.stdout)
    }

    func testProblemsStreamAsTheyAreFoundAndCheckingGoesOn() async throws {
        let dir = TemporaryFolder()
        let (vault, report) = try Integrity.vault(in: dir, external: 6)
        // The largest blob is verified first; a second corrupt one is among the last.
        let bySize = report.imported.sorted { $0.size > $1.size }
        try Self.flipByte(Integrity.blobPath(vault.path, bySize[0].sha256), at: 1)
        try Self.flipByte(Integrity.blobPath(vault.path, bySize[5].sha256), at: 1)
        final class Seen: @unchecked Sendable {
            let lock = NSLock()
            var done = 0
            var doneAtProblem: [Int] = []
        }
        let seen = Seen()
        let result = try await Vault.fsck(at: vault.path, options: FsckOptions(workers: 2),
            onProblem: { _ in seen.lock.withLock { seen.doneAtProblem.append(seen.done) } },
            progress: { p in seen.lock.withLock { seen.done = p.blobsDone } })
        XCTAssertEqual(Set(result.problems.compactMap(\.sha256)), [bySize[0].sha256, bySize[5].sha256])
        XCTAssertEqual(result.checkedBlobs, 6, "checking went on after the first problem")
        XCTAssertEqual(seen.doneAtProblem.count, 2)
        XCTAssertLessThan(seen.doneAtProblem.first ?? 6, 6, "the first problem was held back until the end")
    }

    func testQuickChecksPresenceAndSizesAndFullRehashesThroughDecompression() async throws {
        let dir = TemporaryFolder()
        let (vault, _) = try Integrity.vault(in: dir, external: 0)
        let text = try dir.write("in/long.txt", TestData.text(600_000))
        let random = try dir.write("in/random.bin", TestData.random(300_000, seed: 3))
        let report = try vault.importFiles([text, random])
        let xz = try XCTUnwrap(report.imported.first { $0.path == text })
        let plain = try XCTUnwrap(report.imported.first { $0.path == random })
        XCTAssertEqual(try vault.blobRecord(xz.sha256).encoding, .xz)
        let initial = try await Integrity.fsck(vault.path)
        XCTAssertEqual(initial.problems, [])

        // A flipped byte inside the xz stream: same size, so only the full check sees it.
        try Self.flipByte(Integrity.blobPath(vault.path, xz.sha256), at: 200)
        let clean = try await Integrity.fsck(vault.path, quick: true)
        XCTAssertEqual(clean.problems, [])
        let full = try await Integrity.fsck(vault.path)
        XCTAssertEqual(full.problems.map(\.kind), [.corruptBlob])
        XCTAssertEqual(full.problems.first?.sha256, xz.sha256)

        // A truncated file: --quick sees the size.
        try Self.flipByte(Integrity.blobPath(vault.path, xz.sha256), at: 200)  // back as it was
        XCTAssertEqual(truncate(Integrity.blobPath(vault.path, plain.sha256), 1000), 0)
        let quick = try await Integrity.fsck(vault.path, quick: true)
        XCTAssertEqual(quick.problems.map(\.kind), [.corruptBlob])
        XCTAssertEqual(quick.problems.first?.sha256, plain.sha256)
        XCTAssertEqual(quick.problems.first?.receipt, plain.id.text)
    }

    func testWrongEncodingOrSizeInTheCatalogIsACatalogProblemRepairedFromTheFile() async throws {
        let dir = TemporaryFolder()
        let (vault, report) = try Integrity.vault(in: dir, external: 1)
        let item = report.imported[0]
        try vault.catalog.write { db in
            try db.execute(sql: "UPDATE blobs SET encoding = 'xz', storedSize = 5 WHERE sha256 = ?", arguments: [BlobID(hex: item.sha256)])
        }
        let found = try await Integrity.fsck(vault.path)
        XCTAssertEqual(found.problems.map(\.kind), [.catalog])
        XCTAssertEqual(found.problems.first?.receipt, item.id.text)
        let repaired = try await Integrity.fsck(vault.path, repair: true)
        XCTAssertTrue(repaired.ok)
        XCTAssertEqual(try vault.blobRecord(item.sha256).encoding, .identity)
        XCTAssertEqual(try vault.blobRecord(item.sha256).storedSize, item.size)
        let clean = try await Integrity.fsck(vault.path)
        XCTAssertEqual(clean.problems, [])
    }

    /// Rows whose parent is gone (written with foreign keys off, as `sqlite3` by hand would): fsck
    /// names the missing receipt and zone, quick or not, and the repair recreates both.
    func testRowsWhoseReceiptOrZoneIsGoneAreFoundAndRepaired() async throws {
        let dir = TemporaryFolder()
        let (vault, report) = try Integrity.vault(in: dir, external: 1, inline: 1)
        let lost = report.imported[0]
        let path = vault.path
        try vault.close()
        try await Self.writeWithoutForeignKeys(path) { db in
            try db.execute(sql: "DELETE FROM receipts WHERE id = ?", arguments: [lost.id])
            try db.execute(sql: "UPDATE receipts SET zone = 'ghost'")
        }
        for quick in [true, false] {
            let found = try await Integrity.fsck(path, quick: quick)
            let details = found.problems.map(\.detail)
            XCTAssertTrue(details.contains("attachments refer to receipt \(lost.id), which the catalog does not have"), "\(details)")
            XCTAssertTrue(details.contains("receipts of zone 'ghost' refer to a zone the catalog does not have"), "\(details)")
        }
        let repaired = try await Integrity.fsck(path, quick: true, repair: true)
        XCTAssertTrue(repaired.ok, "\(repaired.problems)")
        let clean = try await Integrity.fsck(path)
        XCTAssertEqual(clean.problems, [])
    }

    /// A re-scan signature whose receipt row is gone (written with foreign keys off) is found, quick
    /// or not (its band keys are slices of it, indexed on its own row: no band can outlive it).
    func testASignatureWithoutItsReceiptIsFoundQuickOrNot() async throws {
        let dir = TemporaryFolder()
        let (vault, _) = try Integrity.vault(in: dir, external: 0, inline: 1)
        let path = vault.path
        try vault.close()
        try await Self.writeWithoutForeignKeys(path) { db in
            try db.execute(sql: "INSERT INTO textSignatures(receiptRow, extractor, minhash) VALUES (4242, '2', zeroblob(256))")
        }
        for quick in [true, false] {
            let details = try await Integrity.fsck(path, quick: quick).problems.map(\.detail)
            XCTAssertTrue(details.contains("row 4242 of textSignatures refers to a missing row of receipts"), "quick \(quick): \(details)")
        }
    }

    /// Attachments whose blob row is gone (written with foreign keys off) are a missing blob, named with
    /// every receipt that holds it, quick or not; the repair restores the row from the file. The look-up
    /// walks the blob index and reads only those attachments' rows (`Catalog.checkSnapshot`).
    func testAnAttachmentWhoseBlobRowIsGoneNamesItsReceiptsQuickOrNot() async throws {
        let dir = TemporaryFolder()
        let (vault, report) = try Integrity.vault(in: dir, external: 2, inline: 1)
        let path = vault.path
        let victim = report.imported[1]
        try vault.close()
        try await Self.writeWithoutForeignKeys(path) { db in
            try db.execute(sql: "DELETE FROM blobs WHERE hex(sha256) = upper(?)", arguments: [victim.sha256])
        }
        for quick in [true, false] {
            let missing = Integrity.problems(try await Integrity.fsck(path, quick: quick), .missingBlob)
            XCTAssertEqual(missing.map(\.sha256), [victim.sha256], "quick \(quick)")
            XCTAssertEqual(missing.first?.receipts, [victim.id.text], "quick \(quick)")
            XCTAssertTrue(missing.first?.detail.contains("of 1 receipt(s) has no row in the catalog") == true, "\(missing)")
        }
        let repaired = try await Integrity.fsck(path, quick: true, repair: true)
        XCTAssertTrue(repaired.ok, "\(repaired.problems)")
        let clean = try await Integrity.fsck(path)
        XCTAssertEqual(clean.problems, [])
    }

    func testFsckVerifiesOnAllCoresAtOnce() async throws {
        guard ProcessInfo.processInfo.activeProcessorCount >= 2 else {
            print("FsckTests: one core only, the two-worker check cannot be measured here")
            return
        }
        let dir = TemporaryFolder()
        let (vault, _) = try Integrity.vault(in: dir, external: 0)
        for i in 0..<4 {
            try dir.write("in/big\(i).bin", TestData.random(64 << 20, seed: UInt64(40 + i)))
        }
        _ = try vault.importFiles((0..<4).map { dir.file("in/big\($0).bin") })
        // Two files are verified at the same moment (whatever else the machine is doing)...
        let items = try vault.catalog.read { db in try BlobID.fetchAll(db, sql: "SELECT sha256 FROM blobs") }.map {
            VerifyItem(id: $0, path: Integrity.blobPath(vault.path, $0.hex), recorded: .identity,
                       size: 64 << 20, storedSize: 64 << 20)
        }
        let sink = FsckSink(onProblem: { _ in }, onProgress: { _ in })
        let (outcomes, peak) = await Vault.verifyAllCounting(items, store: vault.blobs, quick: false, workers: 2, sink: sink)
        XCTAssertEqual(peak, 2, "fsck did not verify two files at once")
        XCTAssertEqual(outcomes.count, 4)
        XCTAssertEqual(sink.checkedBytes, 4 * (64 << 20))
        // ...which, on an idle machine, uses both cores (printed: shared build machines vary).
        var before = rusage(), after = rusage()
        getrusage(Int32(RUSAGE_SELF.rawValue), &before)
        let start = Date()
        let report = try await Integrity.fsck(vault.path)
        let wall = Date().timeIntervalSince(start)
        getrusage(Int32(RUSAGE_SELF.rawValue), &after)
        XCTAssertTrue(report.ok)
        XCTAssertEqual(report.checkedBytes, 4 * (64 << 20))
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        let cpu = seconds(after.ru_utime) - seconds(before.ru_utime) + seconds(after.ru_stime) - seconds(before.ru_stime)
        print("FsckTests: 256 MiB verified in \(String(format: "%.2f", wall)) s "
            + "(\(String(format: "%.2f", Double(256 << 20) / wall / 1e9)) GB/s), cpu/wall \(String(format: "%.2f", cpu / wall))")
    }

    // MARK: - Repair

    func testRepairQuarantinesCorruptBlobsRemovesStaleStagingAndKeepsOrphansAsRecoveredReceipts() async throws {
        let dir = TemporaryFolder()
        let (vault, report) = try Integrity.vault(in: dir, external: 3, inline: 1)
        let corrupt = report.imported[0]
        let corruptPath = Integrity.blobPath(vault.path, corrupt.sha256)
        try Self.flipByte(corruptPath, at: 10)
        let damaged = try Data(contentsOf: URL(fileURLWithPath: corruptPath))
        let orphanBytes = TestData.random(150_000, seed: 99)
        let orphan = try vault.blobs.write(bytes: orphanBytes, compression: .none)
        try dir.write("vault/interim/left.interim", [1, 2, 3])
        try dir.write("vault/blobs/zz/stray", "stray")
        try vault.catalog.write { db in  // a row for bytes that are gone, that nothing refers to
            try BlobRecord(sha256: BlobID(hex: String(repeating: "ab", count: 32))!, size: 10, storedSize: 10, encoding: .identity,
                           inline: nil, createdAt: nowMillis()).insert(db)
        }

        let repaired = try await Integrity.fsck(vault.path, repair: true)
        XCTAssertFalse(repaired.ok, "a corrupt blob with no server to fetch it from is a problem left")
        let byKind = Dictionary(grouping: repaired.problems, by: \.kind)
        XCTAssertEqual(byKind[.corruptBlob]?.map(\.repaired), [false])
        XCTAssertEqual(byKind[.staleInterim]?.map(\.repaired), [true])
        XCTAssertEqual(byKind[.unknownFile]?.map(\.repaired), [true])
        XCTAssertEqual(byKind[.orphanBlob]?.map(\.repaired), [true, true])

        // Never deleted: the corrupt bytes and the stray file are in quarantine/.
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: vault.path + "/quarantine/" + corrupt.sha256)), damaged)
        XCTAssertTrue(FileSystem.exists(vault.path + "/quarantine/stray"))
        XCTAssertFalse(FileSystem.exists(dir.file("vault/interim/left.interim")))
        // The orphan file is now a receipt of zone `recovered`, readable.
        let recovered = try vault.list(ReceiptScope(zone: Zone.recovered))
        XCTAssertEqual(recovered.flatMap(\.attachments).map(\.sha256), [orphan.id.hex])
        var bytes: [UInt8] = []
        try vault.readBlob(vault.blobRecord(orphan.id.hex)) { bytes += $0 }
        XCTAssertEqual(bytes, orphanBytes)
        // Every receipt is still there, and what is left is exactly the missing blob.
        XCTAssertEqual(try vault.list().count, report.imported.count + 1)
        let after = try await Integrity.fsck(vault.path)
        XCTAssertEqual(after.problems.map(\.kind), [.missingBlob])
        XCTAssertEqual(after.problems.first?.receipt, corrupt.id.text)
        // Importing the original file again puts the bytes back under the receipt.
        XCTAssertEqual(corrupt.path, dir.file("in/ext0.bin"))
        _ = try vault.importFiles([corrupt.path])
        let healed = try await Integrity.fsck(vault.path)
        XCTAssertEqual(healed.problems, [])
        XCTAssertEqual(try vault.readBlob(vault.blobRecord(corrupt.sha256)) { _ in }, corrupt.size)
    }

    /// The seam the sync engine fills: a refetcher that stages verified bytes from elsewhere (here
    /// another vault's blob tree, as a mirror would).
    struct MirrorRefetcher: BlobRefetcher {
        let mirror: BlobStore
        func fetch(_ id: BlobID, into store: BlobStore) async throws -> StagedBlob? {
            guard let encoding = try mirror.detectEncoding(id) else { return nil }
            let temp = store.interimPath + "/mirror-" + SecureRandom.hex(8) + ".interim"
            try mirror.copy(id, encoding: encoding, to: temp)
            defer { try? FileSystem.remove(temp) }
            return try FileDescriptor.with(temp, O_RDONLY) { try store.stage(from: $0, compression: .auto, expected: id) }
        }
    }

    func testRepairFetchesMissingAndCorruptBlobsBackThroughTheRefetcher() async throws {
        let dir = TemporaryFolder()
        let (vault, report) = try Integrity.vault(in: dir, external: 3)
        let mirror = TemporaryFolder()
        for item in report.imported {
            let temp = mirror.file("copy-\(item.sha256)")
            try vault.copyBlob(vault.blobRecord(item.sha256), to: temp)
            _ = try FileDescriptor.with(temp, O_RDONLY) { try BlobStore(root: mirror.path).write(from: $0, compression: .none) }
        }
        try Self.flipByte(Integrity.blobPath(vault.path, report.imported[0].sha256), at: 77)
        try FileSystem.remove(Integrity.blobPath(vault.path, report.imported[1].sha256))
        let result = try await Vault.fsck(at: vault.path, options: FsckOptions(
            repair: true, refetcher: MirrorRefetcher(mirror: BlobStore(root: mirror.path))))
        XCTAssertTrue(result.ok, "\(result.problems)")
        XCTAssertEqual(Set(result.problems.map(\.kind)), [.corruptBlob, .missingBlob])
        XCTAssertTrue(result.problems.allSatisfy { $0.detail.contains("fetched back") })
        XCTAssertTrue(FileSystem.exists(vault.path + "/quarantine/" + report.imported[0].sha256))
        let clean = try await Integrity.fsck(vault.path)
        XCTAssertEqual(clean.problems, [])
        for item in report.imported { XCTAssertEqual(try vault.readBlob(vault.blobRecord(item.sha256)) { _ in }, item.size) }
    }

    /// End to end through the binary: the sync engine's fetcher, passed in by `receipt fsck --repair`
    /// when the vault has a remote, brings corrupt and missing blobs back from a real server.
    func testRepairFetchesBlobsBackFromTheSyncServer() throws {
        let dir = TemporaryFolder()
        let (vault, report) = try Integrity.vault(in: dir, external: 3, inline: 1)
        try vault.close()
        let path = dir.file("vault")
        let account = try ReceiptBinary.run(["server", "account-add", "alice", "--data", dir.file("server"), "--json"])
        XCTAssertEqual(account.status, 0, account.stderr)
        let token = try XCTUnwrap((try JSONSerialization.jsonObject(with: account.stdoutData) as? [String: Any])?["token"] as? String)
        let log = dir.file("server.log")
        let server = try Integrity.start(["server", "run", "--data", dir.file("server"), "--listen", "127.0.0.1:0"], stdout: log, stderr: log)
        defer { server.terminate(); _ = Integrity.wait(server, seconds: 10) }
        var url: String?
        for _ in 0..<300 where url == nil {
            usleep(20_000)
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            url = text.split(separator: " ").first { $0.hasPrefix("http://127.0.0.1:") }.map(String.init)
        }
        let serverURL = try XCTUnwrap(url, "the server did not say where it listens")
        XCTAssertEqual(try ReceiptBinary.run(["--vault", path, "remote", "set", serverURL, "--account", "alice", "--token", token]).status, 0)
        let sync = try ReceiptBinary.run(["--vault", path, "sync", "--json"])
        XCTAssertEqual(sync.status, 0, sync.stderr)

        let external = report.imported.filter { $0.size > 100_000 }
        try Self.flipByte(Integrity.blobPath(path, external[0].sha256), at: 99)
        try FileSystem.remove(Integrity.blobPath(path, external[1].sha256))
        let repair = try ReceiptBinary.run(["--vault", path, "fsck", "--repair", "--json"])
        XCTAssertEqual(repair.status, 0, repair.stdout + repair.stderr)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: repair.stdoutData) as? [String: Any])
        let problems = try XCTUnwrap(json["problems"] as? [[String: Any]])
        XCTAssertEqual(Set(problems.compactMap { $0["sha256"] as? String }), [external[0].sha256, external[1].sha256])
        XCTAssertTrue(problems.allSatisfy { ($0["repaired"] as? Bool) == true && ($0["detail"] as? String ?? "").contains("fetched back") },
                      "\(problems)")
        XCTAssertTrue(FileSystem.exists(path + "/quarantine/" + external[0].sha256), "the corrupt file is kept aside")
        let after = try ReceiptBinary.run(["--vault", path, "fsck"])
        XCTAssertEqual(after.status, 0, after.stdout + after.stderr)
        for item in report.imported {
            let cat = try ReceiptBinary.run(["--vault", path, "cat", item.sha256])
            XCTAssertEqual(cat.status, 0, cat.stderr)
            XCTAssertEqual(TestData.sha256([UInt8](cat.stdoutData)), item.sha256)
        }
    }

    // MARK: - The catalog

    func testUnreadableCatalogIsRefusedByEveryCommandThenRebuiltKeepingEveryBlobFile() async throws {
        let dir = TemporaryFolder()
        let (vault, report) = try Integrity.vault(in: dir, external: 3, inline: 1)
        try vault.close()
        let path = dir.file("vault")
        try Self.checkpoint(path)
        try Self.overwrite(path + "/catalog.sqlite", at: 0, with: [UInt8](repeating: 0x5A, count: 4096))
        let before = Integrity.snapshot(path)

        let input = try dir.write("in/new.bin", TestData.random(1000, seed: 1))
        for args in [["list"], ["stats"], ["import", input], ["gc", "--grace", "0"], ["rm", report.imported[0].id.text],
                     ["edit", report.imported[0].id.text, "--merchant", "X"], ["cat", report.imported[0].sha256]] {
            let r = try ReceiptBinary.run(["--vault", path] + args)
            XCTAssertEqual(r.status, 2, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("receipt fsck --repair"), "\(args): \(r.stderr)")
        }
        let check = try ReceiptBinary.run(["--vault", path, "fsck", "--json"])
        XCTAssertEqual(check.status, 1)
        XCTAssertTrue(check.stdout.contains("\"kind\" : \"catalog\""), check.stdout)
        XCTAssertEqual(Integrity.snapshot(path).filter { $0.key != "lock" }, before.filter { $0.key != "lock" },
                       "a command changed an unreadable vault")

        let repair = try ReceiptBinary.run(["--vault", path, "fsck", "--repair", "--json"])
        XCTAssertEqual(repair.status, 0, repair.stdout + repair.stderr)
        let quarantined = try FileManager.default.contentsOfDirectory(atPath: path + "/quarantine")
        XCTAssertEqual(quarantined.count, 1)
        XCTAssertEqual(Integrity.snapshot(path + "/quarantine/" + quarantined[0])["catalog.sqlite"]?.split(separator: " ").prefix(2),
                       before["catalog.sqlite"]?.split(separator: " ").prefix(2), "the damaged catalog is kept as it was")
        let reopened = try Vault.open(at: path)
        defer { try? reopened.close() }
        // Its first page gone, the rest of the old catalog is still read: every receipt comes back,
        // inline blobs (which live only in the catalog) included.
        XCTAssertEqual(reopened.settings, vault.settings)
        let receipts = try reopened.list()
        for item in report.imported {
            XCTAssertTrue(receipts.contains { $0.id == item.id.text && $0.attachments.map(\.sha256) == [item.sha256] }, "receipt \(item.id) lost")
            XCTAssertEqual(try reopened.readBlob(reopened.blobRecord(item.sha256)) { _ in }, item.size)
        }
        let clean = try await Integrity.fsck(path)
        XCTAssertEqual(clean.problems, [])
        XCTAssertEqual(try ReceiptBinary.run(["--vault", path, "list"]).status, 0)
    }

    func testCatalogThatIsNotSQLiteAtAllIsRebuiltWithEveryBlobFileAsARecoveredReceipt() async throws {
        let dir = TemporaryFolder()
        let (vault, report) = try Integrity.vault(in: dir, external: 3, inline: 1, threshold: 1000)
        try vault.close()
        let path = dir.file("vault")
        try Self.checkpoint(path)
        let size = Int(try XCTUnwrap(try FileSystem.status(path + "/catalog.sqlite")).size)
        try Self.overwrite(path + "/catalog.sqlite", at: 0, with: TestData.random(size, seed: 4))
        let repaired = try await Integrity.fsck(path, repair: true)
        XCTAssertTrue(repaired.ok, "\(repaired.problems)")
        let reopened = try Vault.open(at: path)
        defer { try? reopened.close() }
        let recovered = try reopened.list(ReceiptScope(zone: Zone.recovered))
        XCTAssertEqual(Set(recovered.flatMap(\.attachments).map(\.sha256)), Set(report.imported.map(\.sha256)))
        XCTAssertTrue(recovered.allSatisfy { $0.attachments.count == 1 && $0.note?.contains("fsck --repair") == true })
        for item in report.imported {
            XCTAssertEqual(try reopened.readBlob(reopened.blobRecord(item.sha256)) { _ in }, item.size)
        }
        let clean = try await Integrity.fsck(path)
        XCTAssertEqual(clean.problems, [])
    }

    /// The Core Data lesson: a store whose database is gone must not get a fresh, empty one that
    /// makes every blob garbage. `init` refuses, every command points at `fsck --repair`, which keeps
    /// every blob file.
    func testLostCatalogIsNeverReplacedByInitAndRepairKeepsEveryBlobFile() async throws {
        let dir = TemporaryFolder()
        let (vault, report) = try Integrity.vault(in: dir, external: 3)
        try vault.close()
        let path = dir.file("vault")
        for suffix in ["", "-wal", "-shm"] { try FileSystem.remove(path + "/catalog.sqlite" + suffix) }
        for args in [["init"], ["list"], ["gc", "--grace", "0"], ["import", dir.file("in/ext0.bin")]] {
            let r = try ReceiptBinary.run(["--vault", path] + args)
            XCTAssertEqual(r.status, 2, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("receipt fsck --repair"), "\(args): \(r.stderr)")
        }
        XCTAssertFalse(FileSystem.exists(path + "/catalog.sqlite"), "init made a catalog that knows none of the blobs")
        let check = try await Integrity.fsck(path)
        XCTAssertEqual(check.problems.first?.kind, .catalog)
        let repaired = try await Integrity.fsck(path, repair: true)
        XCTAssertTrue(repaired.ok, "\(repaired.problems)")
        let reopened = try Vault.open(at: path)
        defer { try? reopened.close() }
        XCTAssertEqual(Set(try reopened.list(ReceiptScope(zone: Zone.recovered)).flatMap(\.attachments).map(\.sha256)),
                       Set(report.imported.map(\.sha256)))
        XCTAssertEqual(try reopened.collectGarbage(graceSeconds: 0).removedBlobs, 0)
    }

    func testDamagedButReadableCatalogIsSalvagedWithEveryReceiptAndInlineBlob() async throws {
        let dir = TemporaryFolder()
        let (vault, report) = try Integrity.vault(in: dir, external: 2, inline: 3)
        try vault.edit(report.imported[0].id.text, ReceiptMetadata(merchant: "Acme", date: "2025-01-02", total: "12.34", currency: "EUR"))
        let listed = try vault.list()
        let settings = vault.settings
        try vault.close()
        let path = dir.file("vault")
        try Self.checkpoint(path)
        // Destroy the page of an index: the tables are intact, integrity_check fails.
        let (root, pageSize) = try Self.rootPage(path, of: "receipts_by_date")
        try Self.overwrite(path + "/catalog.sqlite", at: (root - 1) * pageSize, with: [UInt8](repeating: 0xEE, count: pageSize))
        let check = try await Integrity.fsck(path)
        XCTAssertEqual(check.problems.map(\.kind), [.catalog])

        let repaired = try await Integrity.fsck(path, repair: true)
        XCTAssertTrue(repaired.ok, "\(repaired.problems)")
        let reopened = try Vault.open(at: path)
        defer { try? reopened.close() }
        XCTAssertEqual(try reopened.list(), listed, "every receipt, with its metadata and attachments, is kept")
        XCTAssertEqual(reopened.settings, settings)
        for item in report.imported {
            XCTAssertEqual(try reopened.readBlob(reopened.blobRecord(item.sha256)) { _ in }, item.size)
        }
        XCTAssertFalse(try reopened.list().contains { $0.zone == Zone.recovered }, "nothing needed recovering")
        let clean = try await Integrity.fsck(path)
        XCTAssertEqual(clean.problems, [])
    }

    func testNewerCatalogIsRefusedEvenByRepairAndNothingChanges() async throws {
        let dir = TemporaryFolder()
        let (vault, report) = try Integrity.vault(in: dir, external: 1, inline: 1)
        try vault.close()
        let path = dir.file("vault")
        try Self.checkpoint(path)
        try Self.overwrite(path + "/catalog.sqlite", at: 60, with: [0, 0, 0, 99])  // PRAGMA user_version = 99
        let before = Integrity.snapshot(path)
        for args in [["list"], ["fsck"], ["fsck", "--repair"], ["gc", "--grace", "0"], ["rm", report.imported[0].id.text]] {
            let r = try ReceiptBinary.run(["--vault", path] + args)
            XCTAssertEqual(r.status, 2, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("upgrade receipt"), "\(args): \(r.stderr)")
        }
        XCTAssertEqual(Integrity.snapshot(path), before)
        XCTAssertFalse(FileSystem.exists(path + "/quarantine"))
    }

    // MARK: - Helpers

    static func flipByte(_ path: String, at offset: Int) throws {
        var data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        data[offset] ^= 0xFF
        try overwrite(path, at: offset, with: [data[offset]])
    }

    static func overwrite(_ path: String, at offset: Int, with bytes: [UInt8]) throws {
        let fd = open(path, O_WRONLY)
        guard fd >= 0 else { throw PathError("opening", path: path, errno: errno) }
        defer { close(fd) }
        let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, bytes.count, off_t(offset)) }
        guard n == bytes.count else { throw PathError("writing", path: path, errno: errno) }
    }

    /// Moves the catalog's WAL into its main file (as a clean shutdown does).
    static func checkpoint(_ vaultPath: String) throws {
        let queue = try DatabaseQueue(path: vaultPath + "/catalog.sqlite")
        _ = try queue.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
        try queue.close()
    }

    static func rootPage(_ vaultPath: String, of name: String) throws -> (Int, Int) {
        let queue = try DatabaseQueue(path: vaultPath + "/catalog.sqlite")
        defer { try? queue.close() }
        return try queue.read { db in
            (try Int.fetchOne(db, sql: "SELECT rootpage FROM sqlite_master WHERE name = ?", arguments: [name]) ?? 0,
             try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096)
        }
    }

    /// Writes to a closed vault's catalog with foreign keys off, as `sqlite3` by hand would.
    static func writeWithoutForeignKeys(_ vault: String, _ body: @escaping @Sendable (Database) throws -> Void) async throws {
        var config = Configuration()
        config.foreignKeysEnabled = false
        let raw = try DatabaseQueue(path: FileSystem.join(vault, Catalog.fileName), configuration: config)
        try await raw.write(body)
        try raw.close()
    }
}
