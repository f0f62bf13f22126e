import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// SQLite's temporary files go into the vault, never into /tmp or /var/tmp: in a mount namespace of
/// its own where both are read-only (bind mounts remounted `ro`, the working folder one of them), with
/// the vault on a tmpfs of its own, `init`, `import` (files, and a manifest with `--json`, which
/// also have a plan database and a report spool) and `fsck` all work. Before, `init` failed with
/// "disk I/O error".
final class TemporaryFilesTests: XCTestCase {
    func testInitImportAndFsckWorkWhereTmpAndVarTmpAreReadOnly() throws {
        let folder = TemporaryFolder("receipt-tmp")
        try folder.write("in/a.txt", "ACME 12.34")
        try folder.write("in/b.bin", TestData.random(300_000, seed: 21))
        try folder.write("m/c.txt", "Grocer 3.50")
        try folder.write("m/manifest.csv", "path,merchant,total,currency\nc.txt,Grocer,3.50,EUR\n")
        try FileManager.default.createDirectory(atPath: folder.file("w"), withIntermediateDirectories: false)
        let script = """
            set -u
            mount --make-rprivate / || exit 90
            for d in /tmp /var/tmp; do
              mount --bind "$d" "$d" && mount -o remount,bind,ro "$d" || exit 91
            done
            touch /tmp/receipt-probe 2>/dev/null && exit 92
            mount -t tmpfs -o size=64m,mode=0700 tmpfs "$2" || exit 93
            cd /tmp
            R="$1"; V="$2/vault"
            "$R" --vault "$V" init 2>&1; echo "init exit $?"
            "$R" --vault "$V" import "$3/in" --no-index 2>&1; echo "import exit $?"
            "$R" --vault "$V" import --manifest "$3/m/manifest.csv" --json --no-index 2>&1; echo "manifest exit $?"
            "$R" --vault "$V" fsck 2>&1; echo "fsck exit $?"
            "$R" --vault "$V" stats --json
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        process.arguments = (geteuid() == 0 ? ["--mount"] : ["--user", "--map-root-user", "--mount"])
            + ["/bin/bash", "-c", script, "bash", ReceiptBinary.path, folder.file("w"), folder.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "the namespace could not be set up:\n\(text)")
        for step in ["init", "import", "manifest", "fsck"] {
            XCTAssertTrue(text.contains("\(step) exit 0"), "\(step) failed:\n\(text)")
        }
        XCTAssertFalse(text.contains("disk I/O error"), text)
        XCTAssertTrue(text.contains("\"receipts\" : 3"), text)
    }
}
