import BlobStore
import Foundation
import TestSupport
import XCTest

/// init, list, show, edit, rm, attach, detach, cat, stats and the global options, through the binary.
final class CommandsTests: CLITestCase {
    static let receiptKeys: Set<String> = ["id", "zone", "merchant", "date", "total", "currency", "category", "note",
                                           "tags", "attachments", "status", "claim", "reimbursedOn",
                                           "filled", "suggestions"]
    static let attachmentKeys: Set<String> = ["sha256", "filename", "size", "mediaType"]

    func testInitOnAnExistingVaultChangesNothingAndSaysSo() throws {
        try importFile("a.txt", Samples.text)
        let before = try state()
        let r = try receipt("init")
        XCTAssertEqual(r.status, 0)
        XCTAssertTrue(r.stdout.contains("already exists"), r.stdout)
        XCTAssertEqual(try state(), before)
        let out = try XCTUnwrap(try json("init") as? [String: Any])
        XCTAssertEqual(Set(out.keys), ["vault", "created", "inlineThreshold", "compression"])
        XCTAssertEqual(out["created"] as? Bool, false)
    }

    func testInitOptionsAreRecordedAndBadModeIsRefused() throws {
        let other = folder.file("other")
        let r = try ReceiptBinary.run(["--vault", other, "init", "--inline-threshold", "0", "--compression", "none", "--json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let out = try XCTUnwrap(JSONSerialization.jsonObject(with: r.stdoutData) as? [String: Any])
        XCTAssertEqual(out["created"] as? Bool, true)
        XCTAssertEqual(out["inlineThreshold"] as? Int, 0)
        XCTAssertEqual(out["compression"] as? String, "none")
        let bad = try ReceiptBinary.run(["--vault", folder.file("third"), "init", "--compression", "zstd"])
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.stderr.contains("invalid compression 'zstd'"), bad.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder.file("third/catalog.sqlite")))
    }

    func testCommandsOnAMissingVaultSayRunInit() throws {
        let r = try ReceiptBinary.run(["--vault", folder.file("nowhere"), "list"])
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.stderr.contains("receipt init"), r.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder.file("nowhere")))
    }

    func testVaultOptionBeforeOrAfterTheSubcommandAndFromTheEnvironment() throws {
        try importFile("a.txt", Samples.text, "--merchant", "Acme")
        let after = try ReceiptBinary.run(["list", "--vault", vault, "--json"])
        let before = try ReceiptBinary.run(["--vault", vault, "list", "--json"])
        let env = try ReceiptBinary.run(["list", "--json"], environment: ["RECEIPT_VAULT": vault])
        let xdg = try ReceiptBinary.run(["list", "--json"], environment: ["RECEIPT_VAULT": "", "XDG_DATA_HOME": folder.path])
        XCTAssertEqual(after.status, 0, after.stderr)
        XCTAssertEqual(after.stdout, before.stdout)
        XCTAssertEqual(env.stdout, before.stdout)
        XCTAssertTrue(before.stdout.contains("Acme"))
        // $XDG_DATA_HOME/receipt is another (absent) vault.
        XCTAssertEqual(xdg.status, 2)
        XCTAssertTrue(xdg.stderr.contains(folder.path + "/receipt"), xdg.stderr)
    }

    func testListJSONShapeHasEveryKeyAndNullForAbsentValues() throws {
        let id = try importFile("scan", Samples.pdf)
        let receipts = try list()
        XCTAssertEqual(receipts.count, 1)
        let r = receipts[0]
        XCTAssertEqual(Set(r.keys), Self.receiptKeys)
        for key in ["merchant", "date", "total", "currency", "category", "note", "claim", "reimbursedOn"] {
            XCTAssertTrue(r[key] is NSNull, "\(key) should be null, is \(String(describing: r[key]))")
        }
        XCTAssertEqual(r["status"] as? String, "none")
        XCTAssertEqual(r["id"] as? String, id)
        XCTAssertEqual(r["zone"] as? String, "personal")
        XCTAssertEqual(r["tags"] as? [String], [])
        let files = try XCTUnwrap(r["attachments"] as? [[String: Any]])
        XCTAssertEqual(files.count, 1)
        XCTAssertEqual(Set(files[0].keys), Self.attachmentKeys)
        XCTAssertEqual(files[0]["filename"] as? String, "scan")
        XCTAssertEqual(files[0]["mediaType"] as? String, "application/pdf", "sniffed from content, no extension")
        XCTAssertEqual(files[0]["size"] as? Int, Samples.pdf.count)
        XCTAssertEqual(files[0]["sha256"] as? String, TestData.sha256(Samples.pdf))
    }

    func testListFiltersAndOrdersOldestFirstUndatedLast() throws {
        let late = try importFile("a.txt", Array("a".utf8), "--date", "2025-06-01", "--merchant", "Acme", "--category", "Tax")
        let undated = try importFile("b.txt", Array("b".utf8), "--merchant", "acme")
        let early = try importFile("c.txt", Array("c".utf8), "--date", "2024-12-31", "--merchant", "Bakery",
                                   "--category", "food", "--total", "3.5", "--currency", "eur", "--note", "n",
                                   "--tag", "x", "--tag", "y z")
        XCTAssertEqual(try list().map { $0["id"] as? String }, [early, late, undated])
        func ids(_ args: String...) throws -> [String] {
            try XCTUnwrap(try json(["list"] + args) as? [[String: Any]]).compactMap { $0["id"] as? String }
        }
        XCTAssertEqual(try ids("--from", "2025-01-01"), [late])
        XCTAssertEqual(try ids("--to", "2025-01-01"), [early])
        XCTAssertEqual(try ids("--from", "2024-12-31", "--to", "2025-06-01"), [early, late])
        XCTAssertEqual(try ids("--merchant", "ACME"), [late, undated])
        XCTAssertEqual(try ids("--category", "tax"), [late])
        XCTAssertEqual(try ids("--zone", "personal").count, 3)
        let full = try list()[0]
        XCTAssertEqual(full["total"] as? String, "3.5")
        XCTAssertEqual(full["currency"] as? String, "EUR")
        XCTAssertEqual(full["tags"] as? [String], ["x", "y z"])
        XCTAssertEqual(full["note"] as? String, "n")
        // Text output: one line per receipt.
        let text = try receipt("list")
        XCTAssertEqual(text.stdout.split(separator: "\n").count, 3)
        // One scope rule for list, search and report.
        for command in [["list"], ["search", "acme"], ["report"]] {
            try assertRefused(command + ["--from", "2025-02-30"], mentioning: "invalid date '2025-02-30'")
            try assertRefused(command + ["--to", "2025-13-01"], mentioning: "invalid date '2025-13-01'")
            try assertRefused(command + ["--status", "maybe"], mentioning: "invalid status 'maybe'")
            try assertRefused(command + ["--zone", "nope"], mentioning: "no zone 'nope'")
        }
    }

    func testShowAcceptsAUniquePrefixOfEightCharacters() throws {
        let id = try importFile("a.txt", Samples.text, "--merchant", "Acme")
        let shown = try XCTUnwrap(try json("show", String(id.prefix(8))) as? [String: Any])
        XCTAssertEqual(Set(shown.keys), Self.receiptKeys)
        XCTAssertEqual(shown["id"] as? String, id)
        XCTAssertEqual(try XCTUnwrap(try json("show", id.uppercased()) as? [String: Any])["id"] as? String, id)
        let text = try receipt("show", id)
        XCTAssertTrue(text.stdout.contains("merchant:  Acme"), text.stdout)
        try assertRefused(["show", String(id.prefix(7))], mentioning: "at least its first 8 characters")
        try assertRefused(["show", "00000000"], mentioning: "no receipt 00000000")
    }

    func testEditChangesMetadataAndRefusesBadValuesWithoutChange() throws {
        let id = try importFile("a.txt", Samples.text, "--merchant", "Acme", "--category", "food")
        let edited = try XCTUnwrap(try json("edit", id, "--total", "12.30", "--currency", "chf", "--date", "2024-02-29",
                                            "--category", "") as? [String: Any])
        XCTAssertEqual(Set(edited.keys), Self.receiptKeys)
        XCTAssertEqual(edited["total"] as? String, "12.30")
        XCTAssertEqual(edited["currency"] as? String, "CHF")
        XCTAssertEqual(edited["date"] as? String, "2024-02-29")
        XCTAssertTrue(edited["category"] is NSNull, "an empty value clears")
        XCTAssertEqual(edited["merchant"] as? String, "Acme")
        try assertRefused(["edit", id, "--date", "2025-02-30"], mentioning: "invalid date '2025-02-30'")
        try assertRefused(["edit", id, "--date", "2023-02-29"], mentioning: "invalid date '2023-02-29'")
        try assertRefused(["edit", id, "--total", "12,3,4"], mentioning: "invalid total '12,3,4'")
        try assertRefused(["edit", id, "--total", "1e9"], mentioning: "invalid total '1e9'")
        try assertRefused(["edit", id, "--currency", "XYZ"], mentioning: "unknown currency 'XYZ'")
        try assertRefused(["edit", id], mentioning: "nothing to change")
        try assertRefused(["edit", id, "--tag", "a;b"], mentioning: "contains ';'")
    }

    func testMerchantsAndCategoriesWithSlashesDotsAndNewlinesAreKeptAsData() throws {
        let merchant = "../../etc/passwd\nsecond line"
        let id = try importFile("a.txt", Samples.text, "--merchant", merchant, "--category", "a/b/..")
        let r = try XCTUnwrap(try json("show", id) as? [String: Any])
        XCTAssertEqual(r["merchant"] as? String, merchant)
        XCTAssertEqual(r["category"] as? String, "a/b/..")
        XCTAssertEqual(try XCTUnwrap(try json("list", "--merchant", merchant) as? [[String: Any]]).count, 1)
        // The text listing stays one line per receipt.
        XCTAssertEqual(try receipt("list").stdout.split(separator: "\n").count, 1)
    }

    func testRmDeletesReceiptsAllOrNothing() throws {
        let a = try importFile("a.txt", Array("a".utf8))
        let b = try importFile("b.txt", Array("b".utf8))
        try assertRefused(["rm", a, "ffffffff"], mentioning: "no receipt ffffffff")
        let out = try XCTUnwrap(try json("rm", String(a.prefix(8))) as? [String: Any])
        XCTAssertEqual(out["removed"] as? [String], [a])
        XCTAssertEqual(try list().compactMap { $0["id"] as? String }, [b])
        // The blob stays until gc.
        let cat = try receipt("cat", TestData.sha256(Array("a".utf8)))
        XCTAssertEqual(cat.status, 0)
        XCTAssertEqual(cat.stdout, "a")
    }

    func testAttachAndDetach() throws {
        let id = try importFile("a.txt", Samples.text)
        let png = try folder.write("in/photo.png", Samples.png)
        let jpg = try folder.write("in/photo", Samples.jpeg)
        let attached = try XCTUnwrap(try json("attach", id, png, jpg) as? [String: Any])
        XCTAssertEqual(Set(attached.keys), Self.receiptKeys)
        let files = try XCTUnwrap(attached["attachments"] as? [[String: Any]])
        XCTAssertEqual(files.map { $0["mediaType"] as? String }, ["text/plain", "image/png", "image/jpeg"])
        // The same content again is not attached twice.
        let again = try XCTUnwrap(try json("attach", id, png) as? [String: Any])
        XCTAssertEqual((again["attachments"] as? [[String: Any]])?.count, 3)
        let sha = TestData.sha256(Samples.png)
        let detached = try XCTUnwrap(try json("detach", id, String(sha.prefix(10))) as? [String: Any])
        XCTAssertEqual((detached["attachments"] as? [[String: Any]])?.compactMap { $0["sha256"] as? String },
                       [TestData.sha256(Samples.text), TestData.sha256(Samples.jpeg)])
        try assertRefused(["detach", id, String(sha.prefix(10))], mentioning: "has no attachment")
        try assertRefused(["attach", id, folder.file("in/missing.pdf")], mentioning: "missing.pdf")
    }

    func testCatWritesVerifiedBytesAndFailsOnCorruption() throws {
        let big = TestData.random(300_000, seed: 7)  // above the inline threshold: a blob file
        try importFile("big.jpg", [0xFF, 0xD8, 0xFF] + big)
        let sha = TestData.sha256([0xFF, 0xD8, 0xFF] + big)
        let r = try receipt("cat", sha)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(Array(r.stdoutData), [0xFF, 0xD8, 0xFF] + big)
        let meta = try XCTUnwrap(try json("cat", sha) as? [String: Any])
        XCTAssertEqual(meta["size"] as? Int, big.count + 3)
        // Flip one byte of the stored file.
        let path = vault + "/blobs/" + sha.prefix(2) + "/" + sha
        var stored = try Data(contentsOf: URL(fileURLWithPath: path))
        stored[stored.count / 2] ^= 0xFF
        try stored.write(to: URL(fileURLWithPath: path))
        let bad = try receipt("cat", sha)
        XCTAssertEqual(bad.status, 1)
        XCTAssertTrue(bad.stderr.contains("blob \(sha) is corrupt"), bad.stderr)
        try assertRefused(["cat", "abc"], mentioning: "invalid blob address 'abc'")
        try assertRefused(["cat", String(repeating: "0", count: 64)], mentioning: "no blob")
    }

    func testCatIntoAReaderThatStopsEarlyEndsWithExitOneNotASignal() throws {
        let big = [0xFF, 0xD8, 0xFF] + TestData.random(3_000_000, seed: 11)
        try importFile("big.jpg", big)
        let script = "'\(ReceiptBinary.path)' --vault '\(vault)' cat \(TestData.sha256(big)) | head -c 10 > /dev/null; "
            + "echo \"status=${PIPESTATUS[0]}\""
        let r = try ReceiptBinary.run(["-c", script], executable: "/bin/bash")
        XCTAssertTrue(r.stdout.contains("status=1"), "stdout: \(r.stdout) stderr: \(r.stderr)")
        XCTAssertTrue(r.stderr.contains("standard output was closed"), r.stderr)
    }

    func testStatsJSONShape() throws {
        try importFile("a.txt", Samples.text)
        try importFile("b.txt", Samples.text)  // same content: one blob
        let stats = try XCTUnwrap(try json("stats") as? [String: Any])
        XCTAssertEqual(Set(stats.keys), ["receipts", "attachments", "blobs", "externalBlobs", "inlineBlobs",
                                         "logicalBytes", "storedBytes", "indexedBlobs", "pendingIndex"])
        XCTAssertEqual(stats["receipts"] as? Int, 2)
        XCTAssertEqual(stats["attachments"] as? Int, 2)
        XCTAssertEqual(stats["blobs"] as? Int, 1)
        XCTAssertEqual(stats["inlineBlobs"] as? Int, 1)
        XCTAssertEqual(stats["externalBlobs"] as? Int, 0)
        XCTAssertEqual(stats["logicalBytes"] as? Int, Samples.text.count)
        XCTAssertTrue(try receipt("stats").stdout.contains("receipts:       2"))
    }

    func testEveryErrorIsOneLineAndBadArgumentsChangeNothing() throws {
        try assertRefused(["import"], mentioning: "give files or folders", status: 64)
        try assertRefused(["frobnicate"], mentioning: "frobnicate", status: 64)
        try assertRefused(["list", "--bogus"], mentioning: "--bogus", status: 64)
    }

    func testShellCompletionScriptIsGenerated() throws {
        let r = try ReceiptBinary.run(["--generate-completion-script", "bash"])
        XCTAssertEqual(r.status, 0, r.stderr)
        for word in ["import", "export", "--manifest", "--zip"] {
            XCTAssertTrue(r.stdout.contains(word), "completion lacks \(word)")
        }
    }

    func testHelpDocumentsExportAndManifest() throws {
        let r = try ReceiptBinary.run(["import", "--help"])
        XCTAssertEqual(r.status, 0)
        XCTAssertTrue(r.stdout.contains("--manifest"))
        let e = try ReceiptBinary.run(["export", "--help"])
        XCTAssertTrue(e.stdout.contains("--zip") && e.stdout.contains("manifest.csv"), e.stdout)
    }

    /// A command that must wait for the vault lock (here gc, behind what stands for an import) says
    /// so on stderr instead of hanging silently, and runs once the lock is free.
    func testACommandWaitingForTheVaultLockSaysSoThenRuns() throws {
        let held = open(vault + "/lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        XCTAssertGreaterThanOrEqual(held, 0)
        defer { close(held) }
        XCTAssertEqual(flock(held, LOCK_SH), 0)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ReceiptBinary.path)
        process.arguments = ["--vault", vault, "gc"]
        let stderr = Pipe()
        process.standardError = stderr
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let firstWrite = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var notice = Data()
        Thread {
            notice = stderr.fileHandleForReading.availableData
            firstWrite.signal()
        }.start()
        let said = firstWrite.wait(timeout: .now() + 30) == .success
        XCTAssertTrue(process.isRunning, "gc ran while the lock was held")
        flock(held, LOCK_UN)
        process.waitUntilExit()
        if !said { firstWrite.wait() }
        XCTAssertTrue(said, "nothing on stderr while waiting")
        XCTAssertEqual(String(decoding: notice, as: UTF8.self),
                       "receipt: another receipt command is using the vault \(vault); waiting for it to finish\n")
        XCTAssertEqual(process.terminationStatus, 0)
    }
}
