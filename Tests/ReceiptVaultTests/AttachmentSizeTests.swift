import Foundation
import GRDB
import ReceiptCatalog
@testable import ReceiptVault
import TestSupport
import XCTest

/// Attachments carry their blob's size (catalog v6), so that listing reads no blob row: every writer
/// gives it, an older catalog gets it when migrated, and fsck finds and `--repair` corrects a wrong one.
final class AttachmentSizeTests: XCTestCase {
    var folder: TemporaryFolder!
    var vault: Vault!

    override func setUpWithError() throws {
        folder = TemporaryFolder("receipt-attachment-size")
        vault = try Vault.create(at: folder.file("vault"), inlineThreshold: 1024, compression: .none).vault
    }

    override func tearDownWithError() throws {
        try vault?.close()
        vault = nil
        folder = nil
    }

    /// Each attachment's own size beside its blob row's.
    func sizes() throws -> [(own: Int64?, blob: Int64)] {
        try vault.catalog.read { db in
            try Row.fetchAll(db, sql: "SELECT a.size, b.size FROM attachments a JOIN blobs b ON b.sha256 = a.sha256")
                .map { (own: $0[0], blob: $0[1]) }
        }
    }

    /// A few receipts through the folder import, attach and the manifest import; inline and external.
    func fill() throws -> [String: Int64] {
        let small = try folder.write("in/a.txt", "a receipt")
        let large = try folder.write("in/b.bin", TestData.random(4000, seed: 2))
        let id = try vault.importFiles([small]).imported[0].id
        _ = try vault.attach(id.text, paths: [try folder.write("in/c.bin", TestData.random(3000, seed: 3))])
        _ = try folder.write("m/d.txt", "from a manifest")
        _ = try folder.write("m/e.bin", TestData.random(5000, seed: 5))
        let manifest = try folder.write("m/manifest.csv", "path,merchant\nd.txt,Shop\ne.bin,Shop\n")
        _ = try vault.importManifest(manifest)
        _ = try vault.importFiles([large])
        return ["a.txt": 9, "b.bin": 4000, "c.bin": 3000, "d.txt": 15, "e.bin": 5000]
    }

    func listedSizes() throws -> [String: Int64] {
        Dictionary(uniqueKeysWithValues: try vault.list().flatMap(\.attachments).map { ($0.filename, $0.size) })
    }

    func testEveryWriterGivesTheBlobsSizeAndListShowsIt() throws {
        let expected = try fill()
        let sizes = try sizes()
        XCTAssertEqual(sizes.count, 5)
        XCTAssertTrue(sizes.allSatisfy { $0.own == $0.blob }, "\(sizes)")
        XCTAssertEqual(try listedSizes(), expected)
    }

    func testAnOlderCatalogGetsTheSizesWhenMigrated() async throws {
        let expected = try fill()
        let path = vault.path
        try vault.close()
        vault = nil
        // The catalog as version 5 wrote it: attachments without a size.
        let queue = try DatabaseQueue(path: path + "/" + Catalog.fileName)
        try await queue.writeWithoutTransaction { db in
            try db.execute(sql: "ALTER TABLE attachments DROP COLUMN size")
            try db.execute(sql: "DROP INDEX blobText_by_extractedAt")
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier IN ('v6-attachment-size', 'v7-text-offer-index')")
            try db.execute(sql: "PRAGMA user_version = 5")
        }
        try queue.close()
        vault = try Vault.open(at: path)
        let sizes = try sizes()
        XCTAssertEqual(sizes.count, 5)
        XCTAssertTrue(sizes.allSatisfy { $0.own == $0.blob }, "\(sizes)")
        XCTAssertEqual(try listedSizes(), expected)
        try vault.close()
        vault = nil
        let check = try await Vault.fsck(at: path)
        XCTAssertTrue(check.ok, "\(check.problems)")
    }

    func testFsckFindsAWrongSizeAndRepairGivesTheBlobsSize() async throws {
        let expected = try fill()
        try vault.catalog.write { db in
            try db.execute(sql: "UPDATE attachments SET size = size + 7 WHERE filename = 'b.bin'")
            try db.execute(sql: "UPDATE attachments SET size = NULL WHERE filename = 'd.txt'")
        }
        // A size the repair has not given yet is read from the blob row; a wrong one is what it says.
        var listed = expected
        listed["b.bin"] = 4007
        XCTAssertEqual(try listedSizes(), listed)
        let path = vault.path
        try vault.close()
        vault = nil
        // Only the full check compares them (a random blob row per attachment).
        let quick = try await Vault.fsck(at: path, options: FsckOptions(quick: true))
        XCTAssertTrue(quick.ok, "\(quick.problems)")
        let check = try await Vault.fsck(at: path)
        XCTAssertFalse(check.ok)
        let problem = try XCTUnwrap(check.problems.first { $0.kind == .catalog }, "\(check.problems)")
        XCTAssertEqual(problem.detail, "2 attachments carry a size other than their blob's: run `receipt fsck --repair` to correct them")
        XCTAssertEqual(check.problems.count, 1, "\(check.problems)")
        let repaired = try await Vault.fsck(at: path, options: FsckOptions(repair: true))
        XCTAssertTrue(repaired.ok, "\(repaired.problems)")
        XCTAssertTrue(repaired.problems.contains { $0.repaired && $0.detail.hasSuffix(": 2 given their blob's size") },
                      "\(repaired.problems)")
        vault = try Vault.open(at: path)
        XCTAssertEqual(try listedSizes(), expected)
        XCTAssertTrue(try sizes().allSatisfy { $0.own == $0.blob })
        try vault.close()
        vault = nil
        let after = try await Vault.fsck(at: path)
        XCTAssertTrue(after.ok, "\(after.problems)")
        // One wrong size is named in the singular.
        vault = try Vault.open(at: path)
        try vault.catalog.write { db in try db.execute(sql: "UPDATE attachments SET size = 1 WHERE filename = 'e.bin'") }
        try vault.close()
        vault = nil
        let one = try await Vault.fsck(at: path)
        XCTAssertEqual(one.problems.map(\.detail),
                       ["1 attachment carries a size other than its blob's: run `receipt fsck --repair` to correct them"])
    }
}
