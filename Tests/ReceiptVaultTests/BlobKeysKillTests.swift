import BlobStore
import Foundation
import GRDB
@testable import ReceiptCatalog
@testable import ReceiptVault
import TestSupport
import XCTest

/// The migration to v12 (`BlobKeys`) run by the real binary on a catalog large enough that its one
/// transaction writes pages to the log before it commits, SIGKILLed while it does: the catalog is
/// the version-11 one it was (the log's uncommitted frames are ignored), never a mix; opened again
/// it migrates, and holds every row it held.
final class BlobKeysKillTests: XCTestCase {
    func testAMigrationKilledMidWayLeavesTheCatalogAsBeforeAndMigratesWhenOpenedAgain() async throws {
        let folder = TemporaryFolder("receipt-blob-keys-kill")
        let template = folder.file("template")
        // 40,000 receipts: about 12 MB of tables to copy, six times SQLite's default page cache.
        try BlobKeysMigrationTests.versionElevenVault(template, receipts: 40_000)
        let catalog = FileSystem.join(template, Catalog.fileName)
        let template11 = try Self.state(catalog)
        let (contents, size) = (template11.contents, template11.size)
        XCTAssertGreaterThan(size, 8 << 20)

        // Moments, as the size of the log: its first page (the transaction has begun writing), and a
        // quarter of the catalog's size (well into the copy of the tables).
        for (moment, logSize) in [("first page in the log", Int64(1)), ("a quarter of the catalog in the log", size / 4)] {
            let vault = folder.file("vault-\(logSize)")
            try FileManager.default.copyItem(atPath: template, toPath: vault)
            XCTAssertTrue(try Integrity.killWhenTheLogReaches(logSize, vault: vault), "\(moment): the migration ended first")

            // As before: version 11's rows and types, the migration not recorded.
            let killedState = try Self.state(FileSystem.join(vault, Catalog.fileName))
            XCTAssertEqual(killedState.types, ["text64", "text64", "text64", "text64"], moment)
            XCTAssertEqual(killedState.migration, "v11-search-text-once", moment)
            XCTAssertEqual(killedState.contents, contents, moment)

            // Opened again, it migrates: every row as it was, addresses as bytes; fsck finds nothing.
            let reopened = try Vault.open(at: vault)
            try reopened.catalog.read { db in
                XCTAssertEqual(try BlobKeysMigrationTests.types(db), ["blob32", "blob32", "blob32", "blob32"], moment)
                XCTAssertEqual(try BlobKeysMigrationTests.contents(db), contents, moment)
            }
            XCTAssertEqual(try reopened.catalog.read { db in
                try Int.fetchOne(db, sql: "SELECT count(*) FROM receiptSearch WHERE receiptSearch MATCH 'sourdough'")
            }, 40_002, moment)
            XCTAssertEqual(try reopened.catalog.searchIndexProblems(), [], moment)
            try reopened.close()
            let check = try await Vault.fsck(at: vault)
            XCTAssertTrue(check.ok, "\(moment): \(check.problems.prefix(5))")
        }
    }

    /// A catalog's address types, last migration, rows (addresses as hex) and size, read as it is.
    static func state(_ path: String) throws -> (types: [String], migration: String?, contents: [String], size: Int64) {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            (try BlobKeysMigrationTests.types(db), try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations").last,
             try BlobKeysMigrationTests.contents(db).map(BlobKeysMigrationTests.asciiHexToHex),
             try Int64.fetchOne(db, sql: "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size") ?? 0)
        }
    }
}
