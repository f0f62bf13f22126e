import BlobStore
import Foundation
import TestSupport
import XCTest
import ZIPFoundation
#if canImport(Glibc)
import Glibc
#endif

/// Private by default: what `receipt` writes in a vault or a server's data folder is readable by
/// its owner only, whatever the user's umask; fsck reports what others could read and --repair
/// takes it away; an export (folder, claim package, zip and what it unzips to) is owner-only too.
final class PermissionsTests: CLITestCase {
    private var savedUmask: mode_t = 0

    override func setUpWithError() throws {
        // A common umask that would leave files 0644 and folders 0755.
        savedUmask = umask(0o022)
        try super.setUpWithError()
    }

    override func tearDown() {
        umask(savedUmask)
        super.tearDown()
    }

    func mode(_ path: String) -> mode_t {
        var st = stat()
        XCTAssertEqual(lstat(path, &st), 0, path)
        return st.st_mode & 0o777
    }

    /// Every folder and file under `root`, with its permission bits.
    func modes(_ root: String) -> [(String, mode_t, Bool)] {
        var out: [(String, mode_t, Bool)] = [(root, mode(root), true)]
        for name in FileManager.default.subpaths(atPath: root) ?? [] {
            var st = stat()
            guard lstat(root + "/" + name, &st) == 0 else { continue }
            out.append((name, st.st_mode & 0o777, (st.st_mode & S_IFMT) == S_IFDIR))
        }
        return out
    }

    func assertPrivate(_ root: String, file: StaticString = #filePath, line: UInt = #line) {
        let all = modes(root)
        XCTAssertGreaterThan(all.count, 3, file: file, line: line)
        for (path, bits, isDirectory) in all {
            XCTAssertEqual(bits & 0o077, 0, "\(path) is \(String(bits, radix: 8))", file: file, line: line)
            if isDirectory { XCTAssertEqual(bits, 0o700, path, file: file, line: line) }
        }
    }

    func testAVaultAndAServerDataFolderArePrivateFromTheStart() throws {
        XCTAssertEqual(mode(vault), 0o700)
        try importFile("scan.jpg", TestData.random(300_000, seed: 1), "--merchant", "Grocer")
        try importFile("note.txt", Array("a small inline receipt".utf8))
        XCTAssertTrue(FileManager.default.fileExists(atPath: vault + "/blobs"))
        assertPrivate(vault)
        let report = try XCTUnwrap(try json("fsck") as? [String: Any])
        XCTAssertEqual(report["ok"] as? Bool, true, "\(report)")

        let data = folder.file("server")
        let added = try ReceiptBinary.run(["server", "account-add", "alice", "--data", data], currentDirectory: folder.path)
        XCTAssertEqual(added.status, 0, added.stderr)
        XCTAssertEqual(mode(data + "/server.sqlite"), 0o600)
        assertPrivate(data)
    }

    func testFsckReportsWhatOthersCanReadAndRepairTightensIt() throws {
        try importFile("scan.jpg", TestData.random(300_000, seed: 2))
        let blobFolder = vault + "/blobs"
        let blob = try XCTUnwrap(FileManager.default.subpaths(atPath: blobFolder)?.first { $0.count > 60 })
        XCTAssertEqual(chmod(vault, 0o755), 0)
        XCTAssertEqual(chmod(blobFolder + "/" + blob, 0o644), 0)
        XCTAssertEqual(chmod(vault + "/catalog.sqlite", 0o640), 0)

        let found = try XCTUnwrap(try json(["fsck"], status: 1) as? [String: Any])
        let problems = (found["problems"] as? [[String: Any]] ?? []).filter { $0["kind"] as? String == "permissions" }
        XCTAssertEqual(problems.count, 2, "\(found)")
        XCTAssertTrue(problems.allSatisfy { $0["repaired"] as? Bool == false })
        XCTAssertEqual(mode(vault), 0o755, "fsck without --repair changes nothing")

        let repaired = try XCTUnwrap(try json(["fsck", "--repair"]) as? [String: Any])
        XCTAssertEqual(repaired["ok"] as? Bool, true, "\(repaired)")
        XCTAssertEqual((repaired["problems"] as? [[String: Any]])?.filter { $0["kind"] as? String == "permissions" }.count, 2)
        assertPrivate(vault)
        XCTAssertEqual(mode(vault + "/catalog.sqlite"), 0o600)
        let clean = try XCTUnwrap(try json("fsck") as? [String: Any])
        XCTAssertEqual((clean["problems"] as? [[String: Any]])?.count, 0, "\(clean)")
    }

    func testAnExportIsOwnerOnlyWhateverTheUmask() throws {
        try importFile("scan.jpg", TestData.random(300_000, seed: 3), "--date", "2025-03-04")
        try importFile("note.txt", Array("small".utf8))
        for (name, args) in [("out", ["--for", "plain"]), ("claim", ["--for", "claim"])] {
            let destination = folder.file(name)
            let r = try receipt(["export", destination] + args)
            XCTAssertEqual(r.status, 0, r.stderr)
            assertPrivate(destination)
        }
        let zip = folder.file("out.zip")
        XCTAssertEqual(try receipt("export", zip, "--zip").status, 0)
        XCTAssertEqual(mode(zip), 0o600)
        let unzipped = URL(fileURLWithPath: folder.file("unzipped")).standardizedFileURL
        try FileManager.default.createDirectory(at: unzipped, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        try FileManager.default.unzipItem(at: URL(fileURLWithPath: zip), to: unzipped)
        // The folders unzip makes are unzip's (the zip holds files only); the files say 0600.
        let files = modes(unzipped.path).filter { !$0.2 }
        XCTAssertEqual(files.count, 4, "\(files)")
        for (path, bits, _) in files { XCTAssertEqual(bits, 0o600, path) }
    }
}
