import BlobStore
import Foundation
import ReceiptCatalog
@testable import ReceiptVault
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Faults from outside: a full disk, a read-only vault, an unreadable blob, an input that fails to
/// read. Each must end in one clear error, leave no staging file, and leave every earlier receipt
/// intact and fsck clean.
final class FaultTests: XCTestCase {
    /// A small tmpfs at `path`, which this process must be root to mount: a test that mounts one
    /// first calls `runAsRootOfOwnNamespace()`.
    final class Mount {
        let path: String
        let size: String
        private init(path: String, size: String) {
            self.path = path
            self.size = size
        }

        static func tmpfs(at path: String, size: String) throws -> Mount {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            let status = run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", path])
            guard status == 0 else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "mounting a tmpfs at \(path) failed: mount exited \(status)"])
            }
            return Mount(path: path, size: size)
        }

        /// Type, source and size spelled out: in a user namespace mount(8) refuses the short form.
        func remount(_ options: String) -> Bool {
            Mount.run("/bin/mount", ["-t", "tmpfs", "-o", "remount,\(options),size=\(size)", "tmpfs", path]) == 0
        }

        deinit { _ = Mount.run("/bin/umount", ["-l", path]) }

        @discardableResult
        static func run(_ tool: String, _ arguments: [String]) -> Int32 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: tool)
            process.arguments = arguments
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            do { try process.run() } catch { return -1 }
            process.waitUntilExit()
            return process.terminationStatus
        }
    }

    /// Where this process is not root, runs the calling test again, alone, in a user and mount
    /// namespace of its own (`unshare --user --map-root-user --mount`), where it is root and may mount
    /// a tmpfs, and takes that run's outcome: returns true, and the caller returns. Returns false where
    /// this process is root (CI), and the test goes on here.
    func runAsRootOfOwnNamespace(_ test: String = #function) throws -> Bool {
        guard geteuid() != 0 else { return false }
        let name = "ReceiptVaultTests.FaultTests/" + test.prefix { $0 != "(" }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        process.arguments = ["--user", "--map-root-user", "--mount", Bundle.main.executablePath ?? CommandLine.arguments[0], name]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "\(name) as root of a user namespace of its own:\n\(text.suffix(4000))")
        // It ran, and alone (a filter that matched nothing would also exit 0).
        XCTAssertTrue(text.contains("Executed 1 test, with 0 failures"), "\(name):\n\(text.suffix(4000))")
        return true
    }

    /// The vault holds exactly `receipts`, each blob reads back, nothing is staged, and fsck is clean.
    func assertIntact(_ vaultPath: String, _ receipts: [ImportedFile], file: StaticString = #filePath, line: UInt = #line) async throws {
        let vault = try Vault.open(at: vaultPath)
        defer { try? vault.close() }
        XCTAssertEqual(Set(try vault.list().map(\.id)), Set(receipts.map(\.id.text)), file: file, line: line)
        for item in receipts {
            XCTAssertEqual(try vault.readBlob(vault.blobRecord(item.sha256)) { _ in }, item.size, file: file, line: line)
        }
        XCTAssertEqual(try FileSystem.contents(of: vaultPath + "/interim"), [], "a staging file was left", file: file, line: line)
        let fsck = try await Integrity.fsck(vaultPath)
        XCTAssertEqual(fsck.problems, [], file: file, line: line)
    }

    func testFullDiskEndsInAClearErrorAndRemovesTheStagingFile() async throws {
        if try runAsRootOfOwnNamespace() { return }
        let dir = TemporaryFolder()
        // Room for a new catalog (its creation's write-ahead log holds each page its migrations
        // write: 2.1 MB with catalog v9, more since v12 and v13 make their tables again and v15 its
        // 32 band indexes: over 4 MB) and one small file, not for the 8 MB below.
        let mount = try Mount.tmpfs(at: dir.file("small"), size: "8m")
        let vaultPath = mount.path + "/vault"
        _ = try Vault.create(at: vaultPath)
        let first = try dir.write("in/first.bin", TestData.random(300_000, seed: 1))
        let earlier = try ReceiptBinary.run(["--vault", vaultPath, "import", first, "--json"])
        XCTAssertEqual(earlier.status, 0, earlier.stderr)
        let before = try Vault.open(at: vaultPath)
        let kept = try before.list().map { ImportedFile(id: try XCTUnwrap(ReceiptID($0.id)), path: first, sha256: $0.attachments[0].sha256,
                                                          size: $0.attachments[0].size, deduplicated: false, existing: false) }
        try before.close()

        // 8 MB of incompressible bytes into what is left of 8 MB.
        let big = try dir.write("in/big.bin", TestData.random(8_000_000, seed: 2))
        let full = try ReceiptBinary.run(["--vault", vaultPath, "import", big])
        XCTAssertEqual(full.status, 1, full.stderr)
        XCTAssertTrue(full.stderr.contains("No space left on device"), full.stderr)
        XCTAssertTrue(full.stderr.contains("big.bin"), full.stderr)
        XCTAssertFalse(full.stderr.contains("Fatal error"), full.stderr)
        try await assertIntact(vaultPath, kept)

        // The same through attach (all or nothing: the receipt is unchanged).
        let attach = try ReceiptBinary.run(["--vault", vaultPath, "attach", kept[0].id.text, big])
        XCTAssertEqual(attach.status, 2, attach.stderr)
        XCTAssertTrue(attach.stderr.contains("No space left on device"), attach.stderr)
        try await assertIntact(vaultPath, kept)
        withExtendedLifetime(mount) {}
    }

    func testReadOnlyVaultRefusesChangesWithAClearErrorAndStillReads() async throws {
        if try runAsRootOfOwnNamespace() { return }
        let dir = TemporaryFolder()
        let mount = try Mount.tmpfs(at: dir.file("ro"), size: "8m")
        let vaultPath = mount.path + "/vault"
        _ = try Vault.create(at: vaultPath)
        let first = try dir.write("in/first.bin", TestData.random(200_000, seed: 3))
        let vault = try Vault.open(at: vaultPath)
        let kept = try vault.importFiles([first]).imported
        try vault.remove([try vault.importFiles([try dir.write("in/garbage.bin", TestData.random(200_000, seed: 4))]).imported[0].id.text])
        try vault.close()
        XCTAssertTrue(mount.remount("ro"))
        let before = Integrity.snapshot(vaultPath)

        let second = try dir.write("in/second.bin", TestData.random(200_000, seed: 5))
        for args in [["import", second], ["gc", "--grace", "0"], ["rm", kept[0].id.text], ["edit", kept[0].id.text, "--merchant", "X"],
                     ["fsck", "--repair"]] {
            let r = try ReceiptBinary.run(["--vault", vaultPath] + args)
            XCTAssertEqual(r.status, 2, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.lowercased().contains("read-only"), "\(args): \(r.stderr)")
            XCTAssertFalse(r.stderr.contains("SQLite error"), "\(args): \(r.stderr)")
            XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, "\(args): \(r.stderr)")
        }
        // Reading still works.
        let list = try ReceiptBinary.run(["--vault", vaultPath, "list", "--json"])
        XCTAssertEqual(list.status, 0, list.stderr)
        XCTAssertTrue(list.stdout.contains(kept[0].id.text))
        let check = try ReceiptBinary.run(["--vault", vaultPath, "fsck", "--json"])
        XCTAssertEqual(check.status, 0, check.stderr)
        XCTAssertEqual(Integrity.snapshot(vaultPath), before, "a command changed a read-only vault")

        XCTAssertTrue(mount.remount("rw"))
        try await assertIntact(vaultPath, kept)
    }

    func testUnreadableBlobEndsInAClearErrorAndNothingElseIsHarmed() async throws {
        let dir = TemporaryFolder()
        let (vault, report) = try Integrity.vault(in: dir, external: 2, inline: 1)
        try vault.close()
        let victim = report.imported[0]
        let blobPath = Integrity.blobPath(vault.path, victim.sha256)
        let saved = try Data(contentsOf: URL(fileURLWithPath: blobPath))
        // chmod 000 does not stop root: a directory where the file was cannot be read by anyone.
        try FileSystem.remove(blobPath)
        try FileManager.default.createDirectory(atPath: blobPath, withIntermediateDirectories: false)

        let cat = try ReceiptBinary.run(["--vault", vault.path, "cat", victim.sha256])
        XCTAssertNotEqual(cat.status, 0)
        XCTAssertTrue(cat.stderr.contains(victim.sha256), cat.stderr)
        XCTAssertEqual(cat.stderr.split(separator: "\n").count, 1, cat.stderr)
        XCTAssertEqual(cat.stdout, "", "bytes of an unreadable blob were written")
        // Importing the same content again cannot install over it: a clear error, no staging left.
        let again = try ReceiptBinary.run(["--vault", vault.path, "import", dir.file("in/ext0.bin")])
        XCTAssertNotEqual(again.status, 0)
        XCTAssertTrue(again.stderr.contains(victim.sha256), again.stderr)
        XCTAssertEqual(try FileSystem.contents(of: vault.path + "/interim"), [])
        // fsck names exactly that blob, with its receipt; everything else is fine.
        let fsck = try await Integrity.fsck(vault.path)
        XCTAssertEqual(Set(fsck.problems.compactMap(\.sha256)), [victim.sha256], "\(fsck.problems)")
        XCTAssertEqual(fsck.problems.first { $0.kind == .missingBlob }?.receipt, victim.id.text)
        for item in report.imported.dropFirst() {
            let r = try ReceiptBinary.run(["--vault", vault.path, "cat", item.sha256])
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertEqual(r.stdoutData.count, Int(item.size))
        }
        // Put back, all is well again.
        try FileManager.default.removeItem(atPath: blobPath)
        try saved.write(to: URL(fileURLWithPath: blobPath))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: blobPath)  // as the vault keeps blobs
        try await assertIntact(vault.path, report.imported)
    }

    func testInputThatFailsToReadEndsInAClearErrorAndImportsNothingFromIt() async throws {
        let dir = TemporaryFolder()
        // Every blob staged (threshold 0), so a failing read would strand a staging file if any.
        let (vault, report) = try Integrity.vault(in: dir, external: 1, inline: 1, threshold: 0)
        try vault.close()
        // /proc/self/mem is a regular file whose read fails with EIO (offset 0 is never mapped).
        let good = try dir.write("in/good.bin", TestData.random(150_000, seed: 6))
        let r = try ReceiptBinary.run(["--vault", vault.path, "import", "/proc/self/mem", good, "--json"])
        XCTAssertEqual(r.status, 1, r.stderr)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: r.stdoutData) as? [String: Any])
        let failed = try XCTUnwrap(json["failed"] as? [[String: Any]])
        XCTAssertEqual(failed.count, 1)
        XCTAssertEqual(failed.first?["path"] as? String, "/proc/self/mem")
        XCTAssertTrue((failed.first?["error"] as? String ?? "").contains("Input/output error"), "\(failed)")
        let imported = try XCTUnwrap(json["imported"] as? [[String: Any]])
        XCTAssertEqual(imported.count, 1, "the readable file of the same run is imported")
        let added = ImportedFile(id: try XCTUnwrap((imported[0]["id"] as? String).flatMap(ReceiptID.init)), path: good, sha256: imported[0]["sha256"] as? String ?? "",
                                 size: 150_000, deduplicated: false, existing: false)
        try await assertIntact(vault.path, report.imported + [added])

        // A FIFO named explicitly is refused before anything starts (reading it would block).
        XCTAssertEqual(mkfifo(dir.file("in/pipe"), 0o644), 0)
        let fifo = try ReceiptBinary.run(["--vault", vault.path, "import", dir.file("in/pipe")])
        XCTAssertEqual(fifo.status, 2, fifo.stderr)
        XCTAssertTrue(fifo.stderr.contains("pipe"), fifo.stderr)
        try await assertIntact(vault.path, report.imported + [added])
    }
}
