import BlobStore
import Foundation
import GRDB
@testable import ReceiptCatalog
@testable import ReceiptVault
import TestSupport
import XCTest

/// The migration to v15 (`SignatureHalves`) run by the real binary on a catalog whose signatures
/// fill many pages, SIGKILLed while its one transaction writes them to the log: the catalog is the
/// version-14 one it was, never a mix; opened again it migrates, every signature its whole minima's
/// low halves.
final class SignatureHalvesKillTests: XCTestCase {
    func testAMigrationKilledMidWayLeavesTheSignaturesAsBeforeAndMigratesWhenOpenedAgain() async throws {
        let folder = TemporaryFolder("receipt-signature-halves-kill")
        let template = folder.file("template")
        try BlobKeysMigrationTests.versionElevenVault(template, receipts: 20_000)
        try Vault.open(at: template).close()
        // Version 14's signatures: 512 bytes and 32 band rows a receipt (random: their values do not matter here).
        let catalog = FileSystem.join(template, Catalog.fileName)
        let queue = try DatabaseQueue(path: catalog)
        try await queue.write { db in
            try db.execute(sql: "DROP VIEW textBands; DROP TABLE textSignatures")
            try db.execute(sql: Catalog.wholeSignaturesSQL)
            try db.execute(sql: """
                INSERT INTO textSignatures(receiptRow, extractor, minhash) SELECT rowNumber, '2', randomblob(512) FROM receipts;
                INSERT OR IGNORE INTO textBands(bandKey, receiptRow) SELECT random(), s.receiptRow FROM textSignatures s,
                    (SELECT value FROM json_each('[\((0..<32).map(String.init).joined(separator: ","))]'));
                """)
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = ?", arguments: [SignatureHalves.identifier])
        }
        try await queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA user_version = \(Schema.version - 1)")
            try db.checkpoint(.truncate)
        }
        try queue.close()
        let before = try Self.state(catalog)
        XCTAssertEqual(before.signatures.count, 20_002)
        XCTAssertGreaterThan(before.size, 16 << 20)

        for (moment, logSize) in [("first page in the log", Int64(1)), ("an eighth of the catalog in the log", before.size / 8)] {
            let vault = folder.file("vault-\(logSize)")
            try FileManager.default.copyItem(atPath: template, toPath: vault)
            XCTAssertTrue(try Integrity.killWhenTheLogReaches(logSize, vault: vault), "\(moment): the migration ended first")

            let killedState = try Self.state(FileSystem.join(vault, Catalog.fileName))
            XCTAssertEqual(killedState.migration, ReceiptIDKeys.identifier, moment)
            XCTAssertEqual(killedState.bands, "table", moment)
            XCTAssertTrue(killedState.signatures == before.signatures, moment)

            // Opened again, it migrates: each signature the low halves of its whole minima; fsck finds nothing.
            try Vault.open(at: vault).close()
            let after = try Self.state(FileSystem.join(vault, Catalog.fileName))
            XCTAssertEqual(after.migration, SignatureHalves.identifier, moment)
            XCTAssertEqual(after.bands, "view", moment)
            XCTAssertTrue(after.signatures == before.signatures.map { whole in
                Data(stride(from: 0, to: whole.count, by: 4).flatMap { whole[$0..<$0 + 2] })
            }, moment)
            let check = try await Vault.fsck(at: vault)
            XCTAssertTrue(check.ok, "\(moment): \(check.problems.prefix(5))")
        }
    }

    /// A catalog's last migration, what `textBands` is, its signatures in row order and its size.
    static func state(_ path: String) throws -> (migration: String?, bands: String?, signatures: [Data], size: Int64) {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            (try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations").last,
             try String.fetchOne(db, sql: "SELECT type FROM sqlite_master WHERE name = 'textBands'"),
             try Data.fetchAll(db, sql: "SELECT minhash FROM textSignatures ORDER BY receiptRow"),
             try Int64.fetchOne(db, sql: "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size") ?? 0)
        }
    }
}
