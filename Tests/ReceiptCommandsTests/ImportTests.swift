import BlobStore
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `receipt import PATH...`: files and folders, metadata flags, and the inputs users really give it.
final class ImportTests: CLITestCase {
    func testImportJSONShapeAndDeduplication() throws {
        let a = try folder.write("in/a.pdf", Samples.pdf)
        let out = try XCTUnwrap(try json("import", a, "--merchant", "Acme", "--date", "2025-03-04", "--total", "12.34",
                                         "--currency", "usd", "--category", "tax", "--note", "n", "--tag", "t") as? [String: Any])
        XCTAssertEqual(Set(out.keys), ["imported", "failed"])
        let item = try XCTUnwrap((out["imported"] as? [[String: Any]])?.first)
        XCTAssertEqual(Set(item.keys), ["id", "path", "sha256", "size", "deduplicated", "existing"])
        XCTAssertEqual(item["path"] as? String, a)
        XCTAssertEqual(item["sha256"] as? String, TestData.sha256(Samples.pdf))
        XCTAssertEqual(item["size"] as? Int, Samples.pdf.count)
        XCTAssertEqual(item["deduplicated"] as? Bool, false)
        XCTAssertEqual((out["failed"] as? [Any])?.count, 0)
        // The same content under another name: a new receipt, bytes stored once.
        let b = try folder.write("in/b.pdf", Samples.pdf)
        let second = try XCTUnwrap(try json("import", b) as? [String: Any])
        XCTAssertEqual(((second["imported"] as? [[String: Any]])?.first?["deduplicated"]) as? Bool, true)
        // The same file again: nothing added.
        let again = try XCTUnwrap(try json("import", a) as? [String: Any])
        XCTAssertEqual(((again["imported"] as? [[String: Any]])?.first?["existing"]) as? Bool, true)
        let stats = try XCTUnwrap(try json("stats") as? [String: Any])
        XCTAssertEqual(stats["receipts"] as? Int, 2)
        XCTAssertEqual(stats["blobs"] as? Int, 1)
        let r = try list().first { $0["id"] as? String == item["id"] as? String }
        XCTAssertEqual(r?["merchant"] as? String, "Acme")
        XCTAssertEqual(r?["total"] as? String, "12.34")
        XCTAssertEqual(r?["currency"] as? String, "USD")
        XCTAssertEqual(r?["tags"] as? [String], ["t"])
    }

    func testFoldersAreWalkedAndMediaTypesComeFromContent() throws {
        try folder.write("scans/2025/receipt.PDF", Samples.pdf)
        try folder.write("scans/2025/photo.txt", Samples.jpeg)   // a JPEG with a wrong extension
        try folder.write("scans/noext", Samples.png)
        try folder.write("scans/note.txt", Samples.text)
        let out = try XCTUnwrap(try json("import", folder.file("scans")) as? [String: Any])
        XCTAssertEqual((out["imported"] as? [Any])?.count, 4)
        var types: [String: String] = [:]
        for r in try list() {
            for a in r["attachments"] as? [[String: Any]] ?? [] {
                types[a["filename"] as? String ?? ""] = a["mediaType"] as? String
            }
        }
        XCTAssertEqual(types, ["receipt.PDF": "application/pdf", "photo.txt": "image/jpeg", "noext": "image/png",
                               "note.txt": "text/plain"])
    }

    func testSymlinksFIFOsAndSocketsInFoldersAreSkippedAndReportedWithoutHanging() throws {
        try folder.write("scans/good.pdf", Samples.pdf)
        XCTAssertEqual(symlink(folder.file("scans/good.pdf"), folder.file("scans/link.pdf")), 0)
        XCTAssertEqual(mkfifo(folder.file("scans/pipe"), 0o644), 0)
        let socketPath = folder.file("scans/sock")
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in socketPath.utf8.enumerated() where i < raw.count - 1 { raw[i] = b }
        }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        XCTAssertEqual(bound, 0)
        let r = try receipt("import", folder.file("scans"), "--json")
        XCTAssertEqual(r.status, 1, "skipped items are problems: exit 1")
        let out = try XCTUnwrap(JSONSerialization.jsonObject(with: r.stdoutData) as? [String: Any])
        XCTAssertEqual((out["imported"] as? [Any])?.count, 1)
        let failed = try XCTUnwrap(out["failed"] as? [[String: Any]])
        XCTAssertEqual(Set(failed.compactMap { $0["path"] as? String }),
                       [folder.file("scans/link.pdf"), folder.file("scans/pipe"), socketPath])
        XCTAssertEqual(Set(failed.first!.keys), ["path", "error"])
        let errors = failed.compactMap { $0["error"] as? String }.joined(separator: " ")
        XCTAssertTrue(errors.contains("symbolic link") && errors.contains("FIFO") && errors.contains("socket"), errors)
        for line in ["link.pdf", "pipe", "sock"] { XCTAssertTrue(r.stderr.contains(line), r.stderr) }
    }

    func testAFIFOGivenExplicitlyIsRefusedNotRead() throws {
        XCTAssertEqual(mkfifo(folder.file("pipe"), 0o644), 0)
        try assertRefused(["import", folder.file("pipe")], mentioning: "not a regular file or folder")
    }

    func testMissingFilesChangeNothing() throws {
        let good = try folder.write("in/good.pdf", Samples.pdf)
        try assertRefused(["import", good, folder.file("in/missing.pdf")], mentioning: "missing.pdf: no such file")
        XCTAssertEqual(try list().count, 0)
    }

    func testUnreadableFileIsRefused() throws {
        let path = try folder.write("in/secret.pdf", Samples.pdf)
        if getuid() != 0 {
            chmod(path, 0)
            return try assertRefused(["import", path], mentioning: "permission denied")
        }
        // Root reads any file whatever its mode: run the command as nobody, to whom the vault is
        // open and the file is not.
        let everything = FileManager.default.enumerator(atPath: folder.path)?.allObjects as? [String] ?? []
        for item in [""] + everything {
            let full = item.isEmpty ? folder.path : folder.file(item)
            var isFolder: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: full, isDirectory: &isFolder)
            XCTAssertEqual(chmod(full, isFolder.boolValue ? 0o777 : 0o666), 0, full)
        }
        XCTAssertEqual(chmod(path, 0), 0)
        let before = try state()
        let r = try ReceiptBinary.run(["--reuid=65534", "--regid=65534", "--clear-groups", ReceiptBinary.path,
                                       "--vault", vault, "import", path], executable: "/usr/bin/setpriv")
        XCTAssertEqual(r.status, 2, r.stderr)
        XCTAssertTrue(r.stderr.contains("secret.pdf") && r.stderr.contains("permission denied"), r.stderr)
        XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, r.stderr)
        XCTAssertEqual(try state(), before, "nothing changed")
    }

    func testBadMetadataIsRefusedWithOneLineNamingTheValue() throws {
        let path = try folder.write("in/a.pdf", Samples.pdf)
        try assertRefused(["import", path, "--date", "2025-02-30"], mentioning: "invalid date '2025-02-30'")
        try assertRefused(["import", path, "--date", "03/04/2025"], mentioning: "invalid date '03/04/2025'")
        try assertRefused(["import", path, "--total", "12,3,4"], mentioning: "invalid total '12,3,4'")
        try assertRefused(["import", path, "--total", "1e9"], mentioning: "invalid total '1e9'")
        try assertRefused(["import", path, "--total", "NaN"], mentioning: "invalid total 'NaN'")
        try assertRefused(["import", path, "--currency", "EURO"], mentioning: "unknown currency 'EURO'")
        try assertRefused(["import", path, "--currency", "ABC"], mentioning: "unknown currency 'ABC'")
        try assertRefused(["import", path, "--zone", "nope"], mentioning: "no zone 'nope'")
        try assertRefused(["import", path, "--merchant", String(repeating: "m", count: 5000)], mentioning: "merchant is too long")
    }

    func testProgressIsDrawnWhenStderrIsATerminal() throws {
        for i in 0..<5 { try folder.write("many/\(i).txt", Array("receipt \(i)".utf8)) }
        // script(1) runs the command on a pseudo-terminal and copies what it drew.
        func onTerminal(_ args: String) throws -> String {
            let command = "'\(ReceiptBinary.path)' --vault '\(vault)' \(args)"
            let r = try ReceiptBinary.run(["-qec", command, "/dev/null"], executable: "/usr/bin/script")
            XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
            return r.stdout
        }
        let imported = try onTerminal("import '\(folder.file("many"))'")
        XCTAssertTrue(imported.contains("importing 5/5 files"), imported.debugDescription)
        let exported = try onTerminal("export '\(folder.file("out"))'")
        XCTAssertTrue(exported.contains("exporting 5/5 files"), exported.debugDescription)
    }

    func testProgressIsSilentWhenStderrIsNotATerminal() throws {
        for i in 0..<20 { try folder.write("many/\(i).txt", Array("receipt \(i)".utf8)) }
        let r = try receipt("import", folder.file("many"))
        XCTAssertEqual(r.status, 0)
        XCTAssertFalse(r.stderr.contains("\r"), "progress drawn on a pipe")
        XCTAssertEqual(r.stderr, "imported 20 receipt(s)\nindexed the text of 20 file(s)\n")
    }
}
