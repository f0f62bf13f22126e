import BlobStore
import Foundation
import ReceiptVault
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// When `receipt watch` takes a file as complete: no process holds it open for writing, and its size,
/// mtime and ctime have not changed for `--settle` seconds; a file changed between its read and its
/// commit is not committed then. Real writer processes, the built binary.
final class WatchCompletenessTests: CLITestCase {
    func watchOnce(_ extra: [String] = [], status: Int32 = 0, line: UInt = #line) throws -> [String: Any] {
        try XCTUnwrap(try json(["watch", inbox, "--once", "--interval", "0.05"] + extra, status: status, line: line)
            as? [String: Any], line: line)
    }

    /// A shell that writes part of `bytes` to `target`, then holds it open (`read` on a FIFO) until
    /// `finish` is called, then writes the rest and exits: `(head; pause; tail) > FILE`.
    final class PausedWriter {
        let process = Process()
        let fifo: String

        init(_ bytes: [UInt8], firstPart: Int, to target: String, in folder: TemporaryFolder) throws {
            let source = try folder.write("writer-source.bin", bytes)
            fifo = folder.file("writer-go")
            guard mkfifo(fifo, 0o600) == 0 else { throw PathError("making FIFO", path: fifo, errno: errno) }
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "(head -c \(firstPart) \"$1\"; read go < \"$2\"; tail -c +\(firstPart + 1) \"$1\") > \"$3\"",
                                 "sh", source, fifo, target]
            try process.run()
        }

        func finish() {
            let fd = open(fifo, O_WRONLY)  // waits for the shell to be reading it
            _ = write(fd, "\n", 1)
            close(fd)
            process.waitUntilExit()
        }

        deinit { if process.isRunning { process.terminate() } }
    }

    func testAFileItsWriterHoldsOpenIsNotCompleteHoweverLongTheWriterPauses() throws {
        try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: true)
        let whole = TestData.random(150_000, seed: 41)
        let target = inbox + "/scan.bin"
        let writer = try PausedWriter(whole, firstPart: 100_000, to: target, in: folder)
        XCTAssertTrue(waitUntil { (try? FileSystem.status(target))?.size == 100_000 })
        // Unchanged for far longer than --settle, but still open for writing: left for the next run.
        let once = try watchOnce(["--settle", "0.2"])
        XCTAssertEqual((once["imported"] as? [Any])?.count, 0, "\(once)")
        XCTAssertEqual((once["failed"] as? [Any])?.count, 0, "\(once)")
        XCTAssertEqual(files(under: inbox), ["scan.bin"])

        // A running watch imports a file written beside it, and still not the held one.
        let watch = try startWatch("--interval", "0.05", "--settle", "0.2")
        try folder.write("inbox/marker.txt", Samples.text)
        XCTAssertTrue(waitUntil { watch.stdout.contains("marker.txt -> .imported/") }, watch.stdout + watch.stderr)
        XCTAssertFalse(watch.stdout.contains("scan.bin"), watch.stdout)
        writer.finish()
        XCTAssertTrue(waitUntil { watch.stdout.contains("scan.bin -> .imported/") }, watch.stdout + watch.stderr)
        watch.signal(SIGTERM)
        XCTAssertEqual(watch.exitStatus(), 0, watch.stderr)
        XCTAssertEqual(try receiptHashes().sorted(), [TestData.sha256(whole), TestData.sha256(Samples.text)].sorted())
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: inbox + "/.imported/" + (importedFiles.first { $0.hasSuffix("scan.bin") } ?? ""))),
                       Data(whole))
    }

    func testAFileChangedBetweenItsReadAndItsCommitIsNotCommittedThen() throws {
        let first = TestData.random(300_000, seed: 42), more = TestData.random(1_000, seed: 43)
        let path = try folder.write("inbox/grown.bin", first)
        // The catalog's write lock held here: watch reads the file, then waits to commit.
        let held = try Vault.open(at: vault)
        let holding = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        struct RolledBack: Error {}
        Thread.detachNewThread {
            _ = try? held.catalogTransaction { w in
                try w.setSetting("test.hold", "1")
                holding.signal()
                release.wait()
                throw RolledBack()
            }
        }
        XCTAssertEqual(holding.wait(timeout: .now() + 60), .success)
        let watch = try startWatch("--interval", "0.05", "--settle", "0.2", "--no-index")
        // Read: a staging file of it exists, and watch no longer has the file open.
        XCTAssertTrue(waitUntil {
            !((try? FileSystem.contents(of: self.vault + "/interim")) ?? []).isEmpty
                && !Self.opens(watch.process.processIdentifier, path)
        })
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(more))
        try handle.close()
        release.signal()
        XCTAssertTrue(waitUntil { watch.stdout.contains("grown.bin -> .imported/") }, watch.stdout + watch.stderr)
        watch.signal(SIGTERM)
        XCTAssertEqual(watch.exitStatus(), 0, watch.stderr)
        try held.close()
        XCTAssertEqual(try receiptHashes(), [TestData.sha256(first + more)], "one receipt, of the whole file")
    }

    func testAFileAppendedInPiecesBecomesOneReceiptOnceSettled() throws {
        try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: true)
        let whole = TestData.random(100_000, seed: 44)
        var pieces: [String] = []
        for i in 0..<5 { pieces.append(try folder.write("piece\(i)", Array(whole[(i * 20_000)..<((i + 1) * 20_000)]))) }
        let watch = try startWatch("--interval", "0.05", "--settle", "2", "--no-index")
        XCTAssertTrue(waitUntil { watch.stderr.contains("watching") }, watch.stderr)
        // Opened, appended and closed five times, a tenth of a second apart (a stimulus, well within
        // the settle time: each close is a wake-up, none completes the file).
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: "/bin/sh")
        writer.arguments = ["-c", "t=\"$1\"; shift; for p in \"$@\"; do cat \"$p\" >> \"$t\"; sleep 0.1; done",
                            "sh", inbox + "/pieces.bin"] + pieces
        try writer.run()
        writer.waitUntilExit()
        XCTAssertTrue(waitUntil { watch.stdout.contains("pieces.bin -> .imported/") }, watch.stdout + watch.stderr)
        watch.signal(SIGTERM)
        XCTAssertEqual(watch.exitStatus(), 0, watch.stderr)
        XCTAssertEqual(try receiptHashes(), [TestData.sha256(whole)])
    }

    func testAnEmptyFileWaitsToSettleThenGoesToFailedWithItsReason() throws {
        try folder.write("inbox/empty.pdf", [UInt8]())
        try folder.write("inbox/good.txt", Samples.text)
        let out = try watchOnce(["--settle", "0.2"], status: 1)
        let failed = try XCTUnwrap(out["failed"] as? [[String: String]])
        XCTAssertEqual(failed.map { $0["path"] }, [inbox + "/empty.pdf"])
        XCTAssertTrue(failed.first?["error"]?.contains("empty (0 bytes)") ?? false, "\(failed)")
        let why = try String(contentsOfFile: inbox + "/.failed/empty.pdf.error", encoding: .utf8)
        XCTAssertTrue(why.contains("empty (0 bytes)") && why.split(separator: "\n").count == 1, why)
        XCTAssertTrue(FileManager.default.fileExists(atPath: inbox + "/.failed/empty.pdf"))
        XCTAssertEqual(try receiptHashes(), [TestData.sha256(Samples.text)])
    }

    func testTheTextOfWhatWatchImportsIsExtractedAsImportDoesIt() throws {
        try folder.write("inbox/note.txt", "Dental clinic, amoxicillin 12.50\n")
        XCTAssertEqual((try watchOnce(["--settle", "0"])["imported"] as? [Any])?.count, 1)
        let found = try XCTUnwrap(try json("search", "amoxicillin") as? [[String: Any]])
        XCTAssertEqual(found.count, 1, "found by the words of the file, not its name")
    }

    func testASymbolicLinkForImportedOrFailedIsRefusedAndNothingMoves() throws {
        let outside = folder.file("outside")
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        try folder.write("inbox/a.pdf", Samples.pdf)
        for name in [".imported", ".failed"] {
            XCTAssertEqual(symlink(outside, inbox + "/" + name), 0)
            try assertRefused(["watch", inbox, "--once", "--settle", "0"], mentioning: "\(inbox)/\(name) is a symbolic link")
            XCTAssertEqual(files(under: inbox), ["a.pdf"])
            try FileManager.default.removeItem(atPath: inbox + "/" + name)
        }
        // A link made where the month's folder goes: the receipt is made, the file stays, and says why.
        try FileManager.default.createDirectory(atPath: inbox + "/.imported", withIntermediateDirectories: true)
        XCTAssertEqual(symlink(outside, inbox + "/.imported/" + Self.month()), 0)
        let out = try watchOnce(["--settle", "0"], status: 1)
        let failed = try XCTUnwrap(out["failed"] as? [[String: String]])
        XCTAssertTrue(failed.first?["error"]?.contains("is a symbolic link") ?? false, "\(failed)")
        XCTAssertTrue(FileManager.default.fileExists(atPath: inbox + "/a.pdf"))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: outside), [])
    }

    /// Whether process `pid` has `path` open (as the kernel names it: no `//`, no links).
    static func opens(_ pid: Int32, _ path: String) -> Bool {
        guard let resolved = realpath(path, nil) else { return false }
        let real = String(cString: resolved)
        free(resolved)
        let fds = "/proc/\(pid)/fd"
        return ((try? FileSystem.contents(of: fds)) ?? []).contains {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: fds + "/" + $0)) == real
        }
    }
}
