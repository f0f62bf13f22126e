import BlobStore
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `receipt watch DIR`: a watched inbox, driven through the built binary on real files.
final class WatchTests: CLITestCase {
    /// Runs `watch --once` and returns the JSON document.
    func watchOnce(status: Int32 = 0, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        try XCTUnwrap(try json(["watch", inbox, "--once", "--interval", "0.1", "--settle", "0"], status: status, file: file, line: line)
            as? [String: Any], file: file, line: line)
    }

    func testOnceImportsEveryFileOfTheTreeAndMovesItAfterItsReceipt() throws {
        try folder.write("inbox/a.pdf", Samples.pdf)
        try folder.write("inbox/2025/march/b.png", Samples.png)
        try folder.write("inbox/.partial.pdf", Samples.jpeg)
        try folder.write("inbox/.hidden/c.txt", Samples.text)
        let before = Self.month()
        let r = try receipt("watch", inbox, "--once", "--interval", "0.1", "--settle", "0")
        let after = Self.month()
        XCTAssertEqual(r.status, 0, r.stderr)
        // A line per file: what became of it, and where it went.
        XCTAssertTrue(r.stdout.contains("imported") && r.stdout.contains("a.pdf -> .imported/"), r.stdout)
        XCTAssertTrue(r.stdout.contains("2025/march/b.png -> .imported/"), r.stdout)
        XCTAssertEqual(r.stdout.split(separator: "\n").count, 2, r.stdout)
        // Moved into .imported/YYYY-MM/ (the month of the import); hidden names left alone.
        let month = try XCTUnwrap(importedFiles.first?.split(separator: "/").first.map(String.init))
        XCTAssertTrue(month == before || month == after, month)
        XCTAssertEqual(importedFiles, ["\(month)/a.pdf", "\(month)/b.png"])
        XCTAssertEqual(files(under: inbox).filter { !$0.hasPrefix(".imported/") }, [".hidden/c.txt", ".partial.pdf"])
        XCTAssertEqual(try receiptHashes().sorted(), [TestData.sha256(Samples.pdf), TestData.sha256(Samples.png)].sorted())
        // The moved bytes are the receipt's.
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: inbox + "/.imported/\(month)/a.pdf")), Data(Samples.pdf))
        // Nothing left: a second run adds nothing.
        let again = try watchOnce()
        XCTAssertEqual((again["imported"] as? [Any])?.count, 0)
        XCTAssertEqual(try list().count, 2)
    }

    func testJSONShapeAndDuplicates() throws {
        // Bytes already a receipt of the zone, under another name: moved, reported as a duplicate.
        try importFile("original.pdf", Samples.pdf)
        try folder.write("inbox/copy-of-scan.pdf", Samples.pdf)
        // The same bytes twice in one run: the first is imported, the second is a duplicate.
        try folder.write("inbox/x1.txt", Samples.text)
        try folder.write("inbox/x2.txt", Samples.text)
        let out = try watchOnce()
        XCTAssertEqual(Set(out.keys), ["imported", "duplicates", "failed"])
        let imported = try XCTUnwrap(out["imported"] as? [[String: Any]])
        XCTAssertEqual(imported.count, 1)
        XCTAssertEqual(Set(imported[0].keys), ["id", "path", "sha256", "size", "deduplicated", "existing"])
        XCTAssertEqual(imported[0]["path"] as? String, inbox + "/x1.txt")
        XCTAssertEqual(imported[0]["sha256"] as? String, TestData.sha256(Samples.text))
        let duplicates = try XCTUnwrap(out["duplicates"] as? [[String: String]])
        XCTAssertEqual(duplicates, [["path": inbox + "/copy-of-scan.pdf", "sha256": TestData.sha256(Samples.pdf)],
                                    ["path": inbox + "/x2.txt", "sha256": TestData.sha256(Samples.text)]])
        XCTAssertEqual((out["failed"] as? [Any])?.count, 0)
        XCTAssertEqual(importedFiles.map { $0.split(separator: "/").last.map(String.init) ?? "" },
                       ["copy-of-scan.pdf", "x1.txt", "x2.txt"])
        XCTAssertEqual(try receiptHashes().sorted(), [TestData.sha256(Samples.pdf), TestData.sha256(Samples.text)].sorted())
    }

    func testATakenNameGetsASuffixAndNothingIsOverwritten() throws {
        let month = Self.month()
        try folder.write("inbox/.imported/\(month)/scan.pdf", "kept")
        try folder.write("inbox/scan.pdf", Samples.pdf)
        try folder.write("inbox/sub/scan.pdf", Samples.jpeg)
        XCTAssertEqual((try watchOnce()["imported"] as? [Any])?.count, 2)
        XCTAssertEqual(try String(contentsOfFile: inbox + "/.imported/\(month)/scan.pdf", encoding: .utf8), "kept")
        // Three files named scan.pdf, none lost (the month may have turned during the run).
        let names = importedFiles.map { $0.split(separator: "/").last.map(String.init) ?? "" }
        XCTAssertEqual(names.count, 3, "\(importedFiles)")
        XCTAssertTrue(Set(names).isSubset(of: ["scan.pdf", "scan-2.pdf", "scan-3.pdf"]), "\(names)")
        let contents = Set(try importedFiles.map { try Data(contentsOf: URL(fileURLWithPath: inbox + "/.imported/" + $0)) })
        XCTAssertEqual(contents, [Data("kept".utf8), Data(Samples.pdf), Data(Samples.jpeg)])
    }

    func testAFileThatFailsGoesToFailedBesideOneLineSayingWhy() throws {
        try folder.write("inbox/good.pdf", Samples.pdf)
        let secret = try folder.write("inbox/secret.pdf", Samples.jpeg)
        XCTAssertEqual(chmod(secret, 0), 0)
        let args = ["--vault", vault, "watch", inbox, "--once", "--interval", "0.1", "--settle", "0", "--json"]
        let r: ReceiptBinary.Result
        if getuid() != 0 {
            r = try ReceiptBinary.run(args, currentDirectory: folder.path)
        } else {
            // Root reads any file whatever its mode: run as nobody, to whom the vault and the inbox
            // are open and the file is not.
            let everything = FileManager.default.enumerator(atPath: folder.path)?.allObjects as? [String] ?? []
            for item in [""] + everything where item != "inbox/secret.pdf" {
                let full = item.isEmpty ? folder.path : folder.file(item)
                var isFolder: ObjCBool = false
                _ = FileManager.default.fileExists(atPath: full, isDirectory: &isFolder)
                XCTAssertEqual(chmod(full, isFolder.boolValue ? 0o777 : 0o666), 0, full)
            }
            r = try ReceiptBinary.run(["--reuid=65534", "--regid=65534", "--clear-groups", ReceiptBinary.path] + args,
                                      currentDirectory: folder.path, executable: "/usr/bin/setpriv")
        }
        XCTAssertEqual(r.status, 1, "some file failed: \(r.stderr)")
        let out = try XCTUnwrap(try JSONSerialization.jsonObject(with: r.stdoutData) as? [String: Any])
        let failed = try XCTUnwrap(out["failed"] as? [[String: String]])
        XCTAssertEqual(failed.count, 1)
        XCTAssertEqual(failed.first?["path"], secret)
        XCTAssertTrue(failed.first?["error"]?.contains("Permission denied") ?? false, "\(failed)")
        XCTAssertEqual((out["imported"] as? [[String: Any]])?.first?["path"] as? String, inbox + "/good.pdf")
        XCTAssertFalse(FileManager.default.fileExists(atPath: secret))
        XCTAssertTrue(FileManager.default.fileExists(atPath: inbox + "/.failed/secret.pdf"))
        let why = try String(contentsOfFile: inbox + "/.failed/secret.pdf.error", encoding: .utf8)
        XCTAssertEqual(why.split(separator: "\n").count, 1, why)
        XCTAssertTrue(why.hasSuffix("\n") && why.contains("Permission denied") && why.contains("secret.pdf"), why)
        XCTAssertEqual(try receiptHashes(), [TestData.sha256(Samples.pdf)])
        // A failed file is not tried again: the next run has nothing to do and exits 0.
        XCTAssertEqual((try watchOnce()["failed"] as? [Any])?.count, 0)
    }

    func testBadFoldersAndOptionsAreRefusedWithOneLine() throws {
        try assertRefused(["watch", folder.file("missing"), "--once"], mentioning: "no such folder")
        try folder.write("plain.pdf", Samples.pdf)
        try assertRefused(["watch", folder.file("plain.pdf"), "--once"], mentioning: "not a folder")
        try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: true)
        try assertRefused(["watch", inbox, "--zone", "nowhere", "--once"], mentioning: "no zone 'nowhere'")
        try assertRefused(["watch", inbox, "--json"], mentioning: "--json needs --once", status: 64)
        try assertRefused(["watch", inbox, "--interval", "0"], mentioning: "invalid interval", status: 64)
        // An empty inbox: nothing to do, exit 0.
        let out = try watchOnce()
        XCTAssertEqual(out.values.compactMap { ($0 as? [Any])?.count }, [0, 0, 0])
    }

    func testAFileStillBeingWrittenIsImportedOnlyOnceItIsClosed() throws {
        try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: true)
        // An interval far longer than the test: only the writer's close wakes the watch here.
        let watch = try startWatch("--interval", "600", "--settle", "0.3")
        XCTAssertTrue(waitUntil { watch.stderr.contains("watching") }, watch.stderr)
        let partialPath = inbox + "/long-scan.pdf"
        let fd = open(partialPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        XCTAssertGreaterThanOrEqual(fd, 0)
        let writer = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        let first = TestData.random(300_000, seed: 1)
        try writer.write(contentsOf: first)
        try writer.synchronize()
        // A file written and closed beside it is imported at once ...
        try folder.write("inbox/marker.txt", Samples.text)
        XCTAssertTrue(waitUntil { watch.stdout.contains("marker.txt -> .imported/") }, watch.stdout + watch.stderr)
        // ... the open one is not, however many polls the marker's import took.
        XCTAssertTrue(FileManager.default.fileExists(atPath: partialPath))
        XCTAssertFalse(watch.stdout.contains("long-scan.pdf"), watch.stdout)
        let rest = TestData.random(200_000, seed: 2)
        try writer.write(contentsOf: rest)
        try writer.close()
        XCTAssertTrue(waitUntil { watch.stdout.contains("long-scan.pdf -> .imported/") }, watch.stdout + watch.stderr)
        XCTAssertEqual(try receiptHashes().sorted(), [TestData.sha256(first + rest), TestData.sha256(Samples.text)].sorted())
        watch.signal(SIGTERM)
        XCTAssertEqual(watch.exitStatus(), 0, watch.stderr)
    }

    func testSIGTERMFinishesTheFileInFlightThenExitsZero() throws {
        try folder.write("inbox/a.pdf", Samples.pdf)
        try folder.write("inbox/b.png", Samples.png)
        // The vault's lock held as gc holds it: watch waits in a.pdf's import, before reading it.
        let lock = try HeldVaultLock(vault: vault)
        let watch = try startWatch("--interval", "0.1", "--settle", "0")
        XCTAssertTrue(waitUntil { watch.stderr.contains("waiting for it to finish") }, watch.stderr)
        watch.signal(SIGTERM)
        lock.release()
        XCTAssertEqual(watch.exitStatus(), 0, watch.stderr)
        // a.pdf was finished (receipt, then moved); b.png was not started.
        XCTAssertEqual(try receiptHashes(), [TestData.sha256(Samples.pdf)])
        XCTAssertEqual(importedFiles.map { $0.split(separator: "/").last.map(String.init) ?? "" }, ["a.pdf"])
        XCTAssertTrue(FileManager.default.fileExists(atPath: inbox + "/b.png"))
        XCTAssertTrue(watch.stdout.contains("a.pdf -> .imported/") && !watch.stdout.contains("b.png"), watch.stdout)
    }

    func testAFileThatVanishesOrChangesDuringItsImportIsNeitherLostNorImportedTwice() throws {
        let gone = try folder.write("inbox/a-gone.pdf", Samples.pdf)
        let lock = try HeldVaultLock(vault: vault)
        let watch = try startWatch("--interval", "0.1", "--settle", "0")
        XCTAssertTrue(waitUntil { watch.stderr.contains("waiting for it to finish") }, watch.stderr)
        // Removed while its import waited: nothing to import, nothing reported.
        try FileManager.default.removeItem(atPath: gone)
        lock.release()
        try folder.write("inbox/b-next.txt", Samples.text)
        XCTAssertTrue(waitUntil { watch.stdout.contains("b-next.txt -> .imported/") }, watch.stdout + watch.stderr)
        XCTAssertEqual(try receiptHashes(), [TestData.sha256(Samples.text)])
        watch.signal(SIGTERM)
        XCTAssertEqual(watch.exitStatus(), 0, watch.stderr)
        XCTAssertFalse(watch.stdout.contains("a-gone.pdf"), watch.stdout)
        XCTAssertFalse(FileManager.default.fileExists(atPath: inbox + "/.failed"))

        // Appended to after it was judged complete, before its import read it: nothing is committed
        // then, the file is judged again, and its whole bytes become one receipt.
        let grown = try folder.write("inbox/c-grown.txt", "first part\n")
        let lock2 = try HeldVaultLock(vault: vault)
        let again = try startWatch("--interval", "0.1", "--settle", "0")
        XCTAssertTrue(waitUntil { again.stderr.contains("waiting for it to finish") }, again.stderr)
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: grown))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("second part\n".utf8))
        try handle.close()
        lock2.release()
        XCTAssertTrue(waitUntil { again.stdout.contains("c-grown.txt -> .imported/") }, again.stdout + again.stderr)
        again.signal(SIGTERM)
        XCTAssertEqual(again.exitStatus(), 0, again.stderr)
        let whole = TestData.sha256(Array("first part\nsecond part\n".utf8))
        XCTAssertEqual(try receiptHashes().filter { $0 == whole }.count, 1, "one receipt of the whole file")
        XCTAssertEqual(try receiptHashes().count, 2)
        XCTAssertEqual(files(under: inbox).filter { !$0.hasPrefix(".imported/") }, [])
    }
}
