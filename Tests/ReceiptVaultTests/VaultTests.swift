import BlobStore
import Foundation
import GRDB
import ReceiptCatalog
@testable import ReceiptVault
import TestSupport
import XCTest

/// The vault's invariants (docs/DESIGN.md), through the library.
final class VaultTests: XCTestCase {
    var folder: TemporaryFolder!
    var vault: Vault!

    override func setUpWithError() throws {
        folder = TemporaryFolder("receipt-vault")
        vault = try Vault.create(at: folder.file("vault"), inlineThreshold: 1024).vault
    }

    override func tearDownWithError() throws {
        try vault?.close()
        vault = nil
        folder = nil
    }

    func count(_ table: String) throws -> Int {
        try vault.catalog.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM \(table)") ?? -1 }
    }

    /// Tables and blob files: what a failed command must leave as it found it.
    func fingerprint() throws -> [String] {
        var out: [String] = []
        for table in ["receipts", "attachments", "blobs", "changes", "zones", "importCache"] {
            out.append("\(table)=\(try count(table))")
        }
        out.append(contentsOf: try vault.blobs.enumerate().map { "\($0.path):\($0.storedSize)" })
        out.append(contentsOf: try FileSystem.contents(of: vault.blobs.interimPath).sorted())
        return out
    }

    // I1 and I6, once, against the ingest path every caller goes through (`Vault.ingest`: import,
    // manifest import, attach, watch, sync pull, fsck's repair, the catalog rebuild); each caller is
    // killed mid-way in CrashTests, WatchKillTests, IngestKillTests and PullKillTests.
    func testIngestInstallsEachBlobBeforeItsRowAndCommitsTheCallersRowsWithIt() throws {
        struct Refused: Error {}
        // A blob that cannot be installed (its fan-out folder is taken by a file) must leave no row.
        let bytes = TestData.random(10_000, seed: 1)
        let id = SHA256Hasher.hash(bytes)
        try FileManager.default.createDirectory(atPath: vault.blobs.blobsPath, withIntermediateDirectories: true)
        try Data("not a folder".utf8).write(to: URL(fileURLWithPath: vault.blobs.blobsPath + "/" + id.fanOut))
        let receipt = try XCTUnwrap(ReceiptID("1f2e3d4c-5b6a-4789-9abc-def012345678"))
        XCTAssertThrowsError(try vault.ingestOnce([.bytes(bytes)]) { w, _ in try w.addReceipt(Receipt(id: receipt, zone: Zone.personal, createdAt: w.now, modifiedAt: w.now)) })
        XCTAssertEqual(try count("blobs"), 0, "no row may refer to a blob that is not installed")
        XCTAssertEqual(try count("changes"), 0, "the caller's rows never ran")
        try FileManager.default.removeItem(atPath: vault.blobs.blobsPath + "/" + id.fanOut)

        // The caller's rows fail: its outbox entry goes with the blob rows (one transaction, I6),
        // and the installed file is left for gc (durable bytes no row refers to).
        XCTAssertThrowsError(try vault.ingestOnce([.bytes(bytes), .bytes(Array("small".utf8))]) { w, _ in
            try w.addReceipt(Receipt(id: receipt, zone: Zone.personal, createdAt: w.now, modifiedAt: w.now))
            throw Refused()
        })
        XCTAssertEqual(try count("blobs"), 0)
        XCTAssertEqual(try count("changes"), 0)
        XCTAssertTrue(vault.blobs.contains(id))

        // Once it goes through, every committed row's blob is a complete file under its address.
        let done = try vault.ingestOnce([.bytes(bytes)]) { w, ingested in
            try w.addReceipt(Receipt(id: receipt, zone: Zone.personal, createdAt: w.now, modifiedAt: w.now))
            return ingested
        }
        XCTAssertEqual(done.map(\.id), [id])
        let record = try vault.blobRecord(id.hex)
        XCTAssertNil(record.inline)
        XCTAssertEqual(try vault.blobs.verify(id, encoding: record.encoding).size, 10_000)
        XCTAssertEqual(try count("changes"), 1)
        XCTAssertEqual(try FileSystem.contents(of: vault.blobs.interimPath), [], "no staging file left")
    }

    /// The manifest is parsed a chunk of 1,024 rows ahead of the checks (`ManifestPrefetch`): rows
    /// across chunk boundaries keep their order, line numbers and receipts.
    func testAManifestOfSeveralParsedChunksImportsEveryRowInManifestOrder() throws {
        var text = "path,merchant\n"
        for i in 0..<2_500 {
            try folder.write("in/f\(i).txt", "file \(i % 2_000)")  // 500 rows share their content with others
            text += "f\(i).txt,shop \(i)\n"
        }
        try folder.write("in/m.csv", text)
        let report = try vault.importManifest(folder.file("in/m.csv"))
        XCTAssertEqual(report.imported.map(\.path), (0..<2_500).map { "f\($0).txt" })
        XCTAssertEqual(report.failed.count, 0)
        XCTAssertEqual(try count("receipts"), 2_500)
        XCTAssertEqual(try count("blobs"), 2_000)
        let merchant = try vault.catalog.read { db in
            try String.fetchOne(db, sql: """
                SELECT r.merchant FROM receipts r JOIN attachments a ON a.receiptID = r.id WHERE a.filename = 'f2222.txt'
                """)
        }
        XCTAssertEqual(merchant, "shop 2222")
    }

    /// Bad rows in later chunks, and a CSV error after them, are found before anything is written.
    func testBadRowsInLaterParsedChunksImportNothingAndAreNamed() throws {
        var text = "path,merchant\n"
        for i in 0..<2_500 {
            try folder.write("in/f\(i).txt", "file \(i)")
            switch i {
            case 1_100: text += "missing.txt,shop\n"            // line 1,102
            case 2_400: text += "f\(i).txt,shop,extra\n"        // line 2,402
            default: text += "f\(i).txt,shop \(i)\n"
            }
        }
        try folder.write("in/m.csv", text)
        let before = try fingerprint()
        XCTAssertThrowsError(try vault.importManifest(folder.file("in/m.csv"))) { error in
            guard let error = error as? ManifestError else { return XCTFail("\(error)") }
            XCTAssertEqual(error.problems.map(\.line), [1_102, 2_402])
        }
        XCTAssertEqual(try fingerprint(), before)

        // An unterminated quote on the last line, after 2,000 good rows.
        try folder.write("in/q.csv", "path\n" + (0..<2_000).map { "f\($0).txt\n" }.joined() + "\"f1.txt\n")
        XCTAssertThrowsError(try vault.importManifest(folder.file("in/q.csv")))
        XCTAssertEqual(try fingerprint(), before)
    }

    func testDigestHexIsTheBlobIDsHex() {
        for seed in 0..<50 {
            let id = SHA256Hasher.hash(TestData.random(100 + seed, seed: UInt64(seed)))
            XCTAssertEqual(Digest(id).hex, id.hex)
            XCTAssertEqual(Digest(id).blobID, id)
        }
    }

    /// A file that changes after the rows were checked and before they are written is reported failed
    /// (with every row naming that content), and the other rows are imported.
    func testAManifestFileChangedBetweenCheckAndWriteIsReportedFailed() throws {
        try folder.write("in/a.txt", "a")
        try folder.write("in/b.txt", "b")
        try folder.write("in/b-copy.txt", "b")
        try folder.write("in/m.csv", "path\na.txt\nb.txt\nb-copy.txt\n")
        let report = try vault.importManifest(folder.file("in/m.csv")) { progress in
            // The last call of the checking pass: every row has been hashed, nothing written yet.
            if progress.phase == .checking { _ = try? self.folder.write("in/b.txt", "changed") }
        }
        XCTAssertEqual(report.imported.map(\.path), ["a.txt"])
        XCTAssertEqual(report.failed.map(\.path), ["b.txt", "b-copy.txt"], "the content was read from b.txt")
        XCTAssertTrue(report.failed.allSatisfy { $0.error.contains("b.txt changed while it was being imported") })
        XCTAssertEqual(try count("receipts"), 1)
        XCTAssertEqual(try count("blobs"), 1)
    }

    /// Past the first 1,024 small files of a batch, the ingest path reads them inside the batch's
    /// transaction: files that changed there are reported failed too, and nothing of theirs is written.
    func testManifestFilesChangedPastTheFirstReadSliceAreReportedFailed() throws {
        let names = (0..<1_100).map { "f\($0).txt" }
        for name in names { try folder.write("in/" + name, "content of " + name) }
        try folder.write("in/m.csv", "path\n" + names.joined(separator: "\n") + "\n")
        let report = try vault.importManifest(folder.file("in/m.csv")) { progress in
            guard progress.phase == .checking else { return }
            for name in names { _ = try? self.folder.write("in/" + name, "changed " + name) }
        }
        XCTAssertEqual(report.imported.count, 0)
        XCTAssertEqual(Set(report.failed.map(\.path)), Set(names))
        XCTAssertTrue(report.failed.allSatisfy { $0.error.contains("changed while it was being imported") })
        XCTAssertEqual(try count("receipts"), 0)
        XCTAssertEqual(try count("blobs"), 0)
    }

    /// Pass 1 finds the content already in the vault (an orphan, its receipt removed), so pass 2 only
    /// refers to it: a gc between the passes must wait for the import, not take the blob from under it.
    func testGCWaitsForAManifestImportThatFoundItsBlobInTheVault() async throws {
        let bytes = TestData.random(5_000, seed: 7)
        let first = try vault.importFiles([try folder.write("in/scan.bin", bytes)])
        try vault.remove(first.imported.map(\.id.text))
        try folder.write("in/m.csv", "path\nscan.bin\n")
        let gcEnded = DispatchSemaphore(value: 0)
        let other = try Vault.open(at: vault.path)
        defer { try? other.close() }
        let report = try vault.importManifest(folder.file("in/m.csv")) { progress in
            guard progress.phase == .checking else { return }
            Thread { _ = try? other.collectGarbage(graceSeconds: 0); gcEnded.signal() }.start()
            XCTAssertEqual(gcEnded.wait(timeout: .now() + 1), .timedOut, "gc ran between the passes")
        }
        gcEnded.wait()
        XCTAssertEqual(report.imported.map(\.path), ["scan.bin"])
        XCTAssertTrue(report.failed.isEmpty)
        XCTAssertTrue(vault.blobs.contains(SHA256Hasher.hash(bytes)), "the blob file is still there")
        XCTAssertEqual(try count("blobs"), 1)
        let fsck = try await Integrity.fsck(vault.path)
        XCTAssertEqual(fsck.problems.map(\.kind), [])
    }

    // I5
    func testRemoveKeepsBytesUntilGC() throws {
        let big = TestData.random(5_000, seed: 2), small = Array("small".utf8)
        let a = try folder.write("in/big.bin", big), b = try folder.write("in/small.txt", small)
        let report = try vault.importFiles([a, b])
        try vault.remove(report.imported.map(\.id.text))
        XCTAssertEqual(try count("receipts"), 0)
        XCTAssertEqual(try count("attachments"), 0)
        for bytes in [big, small] {
            let record = try vault.blobRecord(SHA256Hasher.hash(bytes).hex)
            var read: [UInt8] = []
            try vault.readBlob(record) { read.append(contentsOf: $0) }
            XCTAssertEqual(read, bytes, "bytes still readable after rm")
        }
        XCTAssertTrue(vault.blobs.contains(SHA256Hasher.hash(big)))
    }

    // I6: each mutation's verb
    func testEveryMutationWritesItsOutboxEntry() throws {
        func changes() throws -> [(String, String)] {
            try vault.catalog.read { db in
                try Row.fetchAll(db, sql: "SELECT \(ReceiptID.shown("receiptID")), kind FROM changes ORDER BY seq").map { ($0[0], $0[1]) }
            }
        }
        var seen = 0
        func expectNew(_ kind: String, _ id: String, line: UInt = #line) throws {
            let all = try changes()
            XCTAssertGreaterThan(all.count, seen, "no outbox entry", line: line)
            XCTAssertTrue(all[seen...].contains { $0 == (id, kind) }, "no \(kind) entry for \(id)", line: line)
            seen = all.count
        }
        let path = try folder.write("in/a.txt", "a")
        let id = try XCTUnwrap(try vault.importFiles([path]).imported.first?.id.text)
        try expectNew("upsert", id)
        try vault.edit(id, ReceiptMetadata(merchant: "Acme"))
        try expectNew("upsert", id)
        try vault.attach(id, paths: [try folder.write("in/b.txt", "b")])
        try expectNew("upsert", id)
        try vault.detach(id, blob: SHA256Hasher.hash(Array("b".utf8)).hex)
        try expectNew("upsert", id)
        let manifestID = "1f2e3d4c-5b6a-4789-9abc-def012345678"
        try folder.write("in/m.csv", "path,id,merchant\na.txt,\(manifestID),X\n")
        _ = try vault.importManifest(folder.file("in/m.csv"))
        try expectNew("upsert", manifestID)
        try folder.write("in/m.csv", "path,id,merchant\nb.txt,\(manifestID),Y\n")
        _ = try vault.importManifest(folder.file("in/m.csv"))
        try expectNew("upsert", manifestID)
        try vault.remove([id])
        try expectNew("delete", id)
        // A re-import that changes nothing writes nothing to sync.
        _ = try vault.importManifest(folder.file("in/m.csv"))
        XCTAssertEqual(try changes().count, seen)
        // Every receipt row's latest outbox entry says what it is now.
        let upserts = try vault.catalog.read { db in
            try String.fetchAll(db, sql: "SELECT \(ReceiptID.shown("id")) FROM receipts WHERE id NOT IN (SELECT receiptID FROM changes WHERE kind = 'upsert')")
        }
        XCTAssertEqual(upserts, [])
    }

    // I8
    func testBadMetadataChangesNothing() throws {
        let path = try folder.write("in/a.pdf", TestData.random(3_000, seed: 9))
        let id = try XCTUnwrap(try vault.importFiles([path]).imported.first?.id.text)
        let before = try fingerprint()
        let bad: [ReceiptMetadata] = [
            ReceiptMetadata(date: "2025-02-30"), ReceiptMetadata(date: "2025-2-3"), ReceiptMetadata(total: "12,3,4"),
            ReceiptMetadata(total: "1e9"), ReceiptMetadata(total: "12.34.5"), ReceiptMetadata(currency: "XYZ"),
            ReceiptMetadata(merchant: "Ac\u{0}me"), ReceiptMetadata(tags: ["a;b"]),
            ReceiptMetadata(note: String(repeating: "n", count: 5000)),
        ]
        for metadata in bad {
            XCTAssertThrowsError(try vault.importFiles([try folder.write("in/new.pdf", TestData.random(4_000, seed: 5))],
                                                       metadata: metadata), "\(metadata)") { error in
                XCTAssertEqual((error as? VaultError)?.kind, .badInput)
            }
            XCTAssertThrowsError(try vault.edit(id, metadata))
            XCTAssertEqual(try fingerprint(), before, "\(metadata) changed the vault")
        }
        let bytes = try folder.write("in/m.csv", "path,date\nnew.pdf,2025-02-30\na.pdf,2025-01-01\n")
        XCTAssertThrowsError(try vault.importManifest(bytes)) { error in
            XCTAssertEqual((error as? ManifestError)?.problems.map(\.line), [2])
        }
        XCTAssertEqual(try fingerprint(), before)
    }

    func testGoodMetadataIsKeptAsDataIncludingPathLikeText() throws {
        let path = try folder.write("in/a.txt", "a")
        let id = try XCTUnwrap(try vault.importFiles([path], metadata: ReceiptMetadata(merchant: "../x/\n..", category: "/")).imported.first?.id.text)
        let view = try vault.show(id)
        XCTAssertEqual(view.merchant, "../x/\n..")
        XCTAssertEqual(view.category, "/")
    }

    func testManifestImportFillsTheStatCache() throws {
        // The stat cache: a second import of an unchanged file takes its hash from the cache.
        let path = try folder.write("in/a.bin", TestData.random(100_000, seed: 4))
        try folder.write("in/m.csv", "path\na.bin\n")
        _ = try vault.importManifest(folder.file("in/m.csv"))
        let cached = try vault.catalog.read { try ImportCacheEntry.fetchOne($0, key: Vault.realPath(path)) }
        XCTAssertEqual(cached?.sha256.hex, TestData.sha256(TestData.random(100_000, seed: 4)))
        // A second import of the unchanged file takes its address from the cache: no new rows, no change.
        let again = try vault.importManifest(folder.file("in/m.csv"))
        XCTAssertEqual(again.imported.map(\.existing), [true])
        XCTAssertEqual(try count("receipts"), 1)
    }

    func testExportNamesAreSafeWhateverTheMetadata() throws {
        let nasty = ["../../../tmp/x", "/", "..", ".", "a\nb", "\u{1}\u{7F}", "CON", "😀", String(repeating: "a", count: 300), ""]
        var receipts: [ReceiptView] = []
        for (i, merchant) in nasty.enumerated() {
            receipts.append(ReceiptView(id: String(format: "%08x", i) + "-0000-4000-8000-000000000000", zone: "personal",
                                        merchant: merchant, date: i % 2 == 0 ? "2025-01-0\(i % 9 + 1)" : "../..",
                                        total: nil, currency: nil, category: nil, note: nil, tags: [],
                                        attachments: [ReceiptView.File(sha256: String(repeating: "a", count: 64),
                                                                       filename: "../../.x\(merchant)", size: 1,
                                                                       mediaType: "application/pdf")]))
        }
        // Two receipts whose names would collide (same date, merchant and id prefix) get -2.
        let twin = { (id: String) in
            ReceiptView(id: id, zone: "personal", merchant: "Acme", date: "2025-03-04", total: nil, currency: nil,
                        category: nil, note: nil, tags: [],
                        attachments: [ReceiptView.File(sha256: String(repeating: "b", count: 64), filename: "a.PDF", size: 1,
                                                       mediaType: "application/pdf")])
        }
        receipts += [twin("1f2e3d4c-0000-4000-8000-000000000001"), twin("1f2e3d4c-0000-4000-8000-000000000002")]
        let items = ExportLayout.exportNames(receipts)
        XCTAssertEqual(items.suffix(2).map(\.name), ["2025/03/2025-03-04_acme_1f2e3d4c.pdf", "2025/03/2025-03-04_acme_1f2e3d4c-2.pdf"])
        XCTAssertEqual(Set(items.map(\.name)).count, items.count, "unique")
        for item in items {
            let parts = item.name.split(separator: "/", omittingEmptySubsequences: false)
            XCTAssertTrue((2...3).contains(parts.count), item.name)
            XCTAssertFalse(parts.contains { $0.isEmpty || $0.hasPrefix(".") }, item.name)
            XCTAssertTrue(item.name.unicodeScalars.allSatisfy { $0.isASCII && $0.value > 0x20 && $0.value < 0x7F }, item.name)
            XCTAssertLessThan(item.name.utf8.count, 100, item.name)
        }
    }
}
