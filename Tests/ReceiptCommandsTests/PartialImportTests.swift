import BlobStore
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// An import that fails after earlier batches committed says how much is in the vault now and exits
/// 1; it never claims that nothing was changed. The failure is a real one: the place where the last
/// file's blob must go is taken by a folder, so installing it fails after the first transaction
/// (16,384 rows: `BatchBudget`'s span) committed.
final class PartialImportTests: CLITestCase {
    static let committedRows = 16_384

    /// `big`'s blob cannot be installed: a folder (with something in it) holds its place in the tree.
    func blockInstall(of big: [UInt8]) throws {
        let hex = TestData.sha256(big)
        try folder.write("vault/blobs/\(hex.prefix(2))/\(hex)/in-the-way", "x")
    }

    func testAManifestThatFailsAfterCommittingSaysHowManyReceiptsAreInTheVault() throws {
        let big = TestData.random(300_000, seed: 13)
        try folder.write("m/small.txt", "a small receipt")
        try folder.write("m/big.bin", big)
        var csv = "path,id\n"
        for _ in 0..<Self.committedRows { csv += "small.txt,\(UUID().uuidString.lowercased())\n" }
        csv += "big.bin,\(UUID().uuidString.lowercased())\n"
        try folder.write("m/manifest.csv", csv)
        try blockInstall(of: big)

        let r = try receipt("import", "--manifest", folder.file("m/manifest.csv"), "--no-index")
        XCTAssertEqual(r.status, 1, r.stderr)
        XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, r.stderr)
        XCTAssertTrue(r.stderr.contains("installing blob"), r.stderr)
        XCTAssertTrue(r.stderr.contains("\(Self.committedRows) receipt(s) with \(Self.committedRows) file(s) were imported before it failed"),
                      r.stderr)
        XCTAssertFalse(r.stderr.contains("nothing was changed"), r.stderr)
        XCTAssertEqual(r.stdout.split(separator: "\n").count, Self.committedRows, "each committed receipt is listed")
        let stats = try XCTUnwrap(try json("stats") as? [String: Any])
        XCTAssertEqual(stats["receipts"] as? Int, Self.committedRows, "what the error says is what the vault holds")
    }

    func testAFolderImportThatFailsAfterCommittingSaysHowManyFilesAreInTheVault() throws {
        let big = TestData.random(300_000, seed: 14)
        try folder.write("in/z-big.bin", big)
        // Written directly: Foundation's Data.write took 7 ms a file here.
        for i in 0..<Self.committedRows {
            try FileDescriptor.with(folder.file(String(format: "in/a%05d.txt", i)), O_WRONLY | O_CREAT | O_EXCL) { fd in
                try fd.write(Array("small \(i)".utf8))
            }
        }
        try blockInstall(of: big)

        let r = try receipt("import", folder.file("in"), "--no-index")
        XCTAssertEqual(r.status, 1, r.stderr)
        XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, r.stderr)
        XCTAssertTrue(r.stderr.contains("\(Self.committedRows) of the \(Self.committedRows + 1) files were imported before it failed"),
                      r.stderr)
        XCTAssertFalse(r.stderr.contains("nothing was changed"), r.stderr)
        let stats = try XCTUnwrap(try json("stats") as? [String: Any])
        XCTAssertEqual(stats["receipts"] as? Int, Self.committedRows)
    }
}
