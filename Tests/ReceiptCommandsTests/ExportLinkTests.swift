import BlobStore
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `export` never writes through a symbolic link another program plants after the destination was
/// checked: not a folder's link, not a file's, not the zip's own name. The export is stopped at a
/// chosen moment for real — strace(1) sends the binary SIGSTOP right after its first mkdir at one
/// path (`-P`): its destination (folder export) or its private working folder beside the zip — the
/// link is planted while it stands still, and it goes on. It must stop with one clear line and write nothing outside.
final class ExportLinkTests: CLITestCase {
    var outside: String { folder.file("outside") }

    override func setUpWithError() throws {
        try super.setUpWithError()
        try importFile("scan.bin", TestData.random(300_000, seed: 7), "--date", "2025-03-04", "--merchant", "Acme")
        try importFile("note.txt", Array("a note".utf8), "--date", "2025-04-01")
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: false)
        try folder.write("outside/victim.txt", "mine")
    }

    /// Runs `receipt --vault VAULT ARGS` under strace, stopped by SIGSTOP after its first mkdirat in
    /// the test's folder (strace's path filter matches the folder of mkdirat's descriptor): the
    /// destination folder, or the zip's private working folder beside it;
    /// `plant` runs while it stands still, then it goes on to its end.
    struct Outcome {
        let status: Int32
        let stderr: String
    }

    func exportStopped(_ args: [String], plant: () throws -> Void) throws -> Outcome {
        let out = folder.file("stdout"), err = folder.file("stderr"), trace = folder.file("trace")
        for file in [out, err, trace] { FileManager.default.createFile(atPath: file, contents: nil) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/strace")
        process.arguments = ["-f", "-qq", "-o", trace, "-P", realpath(folder.path), "-e", "trace=mkdir,mkdirat",
                             "-e", "signal=SIGSTOP", "-e", "inject=mkdir,mkdirat:signal=SIGSTOP:when=1",
                             ReceiptBinary.path, "--vault", vault] + args
        process.currentDirectoryURL = URL(fileURLWithPath: folder.path)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        try process.run()
        defer { process.waitUntilExit() }
        let stopped: Int32
        do {
            stopped = try waitForStop(tracer: process.processIdentifier, trace: trace)
        } catch {
            process.terminate()
            throw error
        }
        try plant()
        if kill(stopped, SIGCONT) != 0 {
            XCTFail("could not continue the stopped export: \(String(cString: strerror(errno)))")
            kill(stopped, SIGKILL)
        }
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, stderr: try String(contentsOfFile: err, encoding: .utf8))
    }

    /// The path with its links and `//` resolved, as strace's path filter compares it.
    func realpath(_ path: String) -> String {
        URL(fileURLWithPath: path).resolvingSymlinksInPath().path
    }

    /// The traced `receipt` once strace reports it stopped by the injected SIGSTOP (its trace says so;
    /// /proc's state alone cannot tell this stop from strace's own stops at every syscall), polled
    /// with a deadline.
    func waitForStop(tracer: Int32, trace: String) throws -> Int32 {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let children = (try? String(contentsOfFile: "/proc/\(tracer)/task/\(tracer)/children", encoding: .utf8)) ?? ""
            if let child = children.split(separator: " ").first.flatMap({ Int32($0) }),
               let traced = try? String(contentsOfFile: trace, encoding: .utf8), traced.contains("--- stopped by SIGSTOP ---") {
                return child
            }
            sched_yield()
        }
        throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "receipt never stopped under strace"])
    }

    func assertOutsideUntouched(file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: outside), ["victim.txt"], file: file, line: line)
        XCTAssertEqual(try String(contentsOfFile: outside + "/victim.txt", encoding: .utf8), "mine", file: file, line: line)
    }

    func assertRefusedInOneLine(_ r: Outcome, naming name: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertNotEqual(r.status, 0, r.stderr, file: file, line: line)
        XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, r.stderr, file: file, line: line)
        XCTAssertTrue(r.stderr.contains(name), r.stderr, file: file, line: line)
        XCTAssertFalse(r.stderr.contains("Fatal error"), r.stderr, file: file, line: line)
    }

    func testALinkToAFolderPlantedWhereAFolderWillGoIsNotFollowed() throws {
        let dest = folder.file("out")
        let r = try exportStopped(["export", dest]) {
            XCTAssertTrue(FileManager.default.fileExists(atPath: dest), "stopped once the destination was made")
            XCTAssertEqual(symlink(outside, dest + "/2025"), 0)
        }
        assertRefusedInOneLine(r, naming: "out/2025: something else created it")
        try assertOutsideUntouched()
    }

    func testALinkPlantedWhereAFileWillGoIsNotWrittenThrough() throws {
        let dest = folder.file("out")
        let r = try exportStopped(["export", dest, "--for", "claim"]) {
            XCTAssertEqual(symlink(outside + "/victim.txt", dest + "/index.csv"), 0)
            XCTAssertEqual(symlink(outside + "/new.json", dest + "/receipts.json"), 0)
        }
        assertRefusedInOneLine(r, naming: "something else created it")
        try assertOutsideUntouched()
    }

    func testAZipWhoseNameBecomesADanglingLinkIsNotWrittenThrough() throws {
        let zip = folder.file("out.zip")
        let r = try exportStopped(["export", zip, "--zip"]) {
            XCTAssertEqual(symlink(outside + "/stolen.zip", zip), 0)
        }
        assertRefusedInOneLine(r, naming: "already exists")
        try assertOutsideUntouched()
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix(".out.zip") }, [],
                       "the zip's working files are gone")
    }
}
