import BlobStore
import Foundation
import GRDB
@testable import ReceiptCatalog
@testable import ReceiptVault
import TestSupport
import XCTest

/// Catalog v13 (`ReceiptIDKeys`): a catalog as version 12 wrote it, receipt ids as 36 characters, is
/// converted when first opened, in one transaction, to ids as their 16 bytes in every table that
/// holds one; every row reads as it did and keeps its row number, and list, show, search and the
/// outbox answer as before. An id in upper case (an older pull's) becomes its lowercase bytes; a
/// value that is no UUID, or one id in two cases, stops the migration with the file untouched.
final class ReceiptIDKeysMigrationTests: XCTestCase {
    var folder: TemporaryFolder!

    override func setUp() { folder = TemporaryFolder("receipt-id-keys") }
    override func tearDown() { folder = nil }

    static let pharmacy = BlobKeysMigrationTests.pharmacy
    static let cafe = BlobKeysMigrationTests.cafe
    static let gone = "44444444-4444-4444-8444-444444444444"
    static let shouted = "CAFECAFE-2222-4222-8222-22222222222A"
    static let tables = ["receipts": "id", "attachments": "receiptID", "changes": "receiptID", "syncState": "receiptID"]

    /// `BlobKeysMigrationTests`' receipts with an outbox and sync state, as version 12 wrote them
    /// (ids as text); `extra` runs before the blob keys are converted.
    static func versionTwelveVault(_ path: String, receipts count: Int = 0, extra: (Database) throws -> Void = { _ in }) throws {
        try BlobKeysMigrationTests.versionElevenVault(path, receipts: count) { db in
            // The newest receipt row and outbox entry are gone: their numbers are not given again.
            try db.execute(sql: """
                INSERT INTO receipts(id, zone, tags, createdAt, modifiedAt) VALUES ('\(gone)', 'personal', '[]', 1, 1);
                DELETE FROM receipts WHERE id = '\(gone)';
                INSERT INTO changes(receiptID, zone, kind, at) SELECT id, zone, 'upsert', 3 FROM receipts ORDER BY rowNumber;
                INSERT INTO changes(receiptID, zone, kind, at) VALUES ('\(gone)', 'personal', 'delete', 4), ('\(cafe)', 'personal', 'upsert', 5);
                INSERT INTO syncState(receiptID, zone, changeTag, base) SELECT id, zone, 'tag' || rowNumber, NULL FROM receipts;
                DELETE FROM changes WHERE seq = 1 OR seq = (SELECT max(seq) FROM changes);
                """)
            try extra(db)
        }
        let queue = try DatabaseQueue(path: FileSystem.join(path, Catalog.fileName))
        try Schema.migrator.migrate(queue, upTo: "v13-plain-text-once")
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA user_version = 14") }
        try queue.close()
    }

    /// Every row of the tables that hold an id, the ids as text whatever their type.
    static func contents(_ db: Database) throws -> [String] {
        let id = ReceiptID.shown
        return try [
            "SELECT rowNumber, \(id("id")), zone, merchant, date, total, currency, tags, createdAt, modifiedAt, status FROM receipts ORDER BY rowNumber",
            "SELECT receiptRow, lower(hex(sha256)), \(id("receiptID")), filename, mediaType, position, size FROM attachments ORDER BY 1, 2",
            "SELECT seq, \(id("receiptID")), zone, kind, at FROM changes ORDER BY seq",
            "SELECT rowid, \(id("receiptID")), zone, changeTag, base FROM syncState ORDER BY rowid",
            "SELECT name, seq FROM sqlite_sequence WHERE name IN ('receipts', 'changes') ORDER BY name",
            "SELECT * FROM keptCounts",
        ].flatMap { sql in
            try Row.fetchAll(db, sql: sql).map { row in row.databaseValues.map { "\($0)" }.joined(separator: " ") }
        }
    }

    static func types(_ db: Database) throws -> [String] {
        try tables.keys.sorted().map { table in
            try String.fetchAll(db, sql: "SELECT DISTINCT typeof(\(tables[table]!)) || length(\(tables[table]!)) FROM \(table) ORDER BY 1").joined(separator: ",")
        }
    }

    func testAVersionTwelveCatalogMigratesToIDsAsBytesKeepingEveryRowAndAnswer() async throws {
        let path = folder.file("vault")
        try Self.versionTwelveVault(path, receipts: 3)
        let raw = try DatabaseQueue(path: FileSystem.join(path, Catalog.fileName))
        let (before, typesBefore) = try await raw.read { db in (try Self.contents(db), try Self.types(db)) }
        XCTAssertEqual(typesBefore, ["text36", "text36", "text36", "text36"])
        try raw.close()
        let vault = try Vault.open(at: path)
        try vault.catalog.read { db in
            XCTAssertEqual(try Self.types(db), ["blob16", "blob16", "blob16", "blob16"])
            XCTAssertEqual(try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations").suffix(2), [ReceiptIDKeys.identifier, SignatureHalves.identifier])
            XCTAssertEqual(try Self.contents(db), before)
            // The outbox and the sync state answer by typed id.
            let pending = try Outbox.pending(db, of: [try XCTUnwrap(ReceiptID(Self.cafe)), try XCTUnwrap(ReceiptID(Self.gone))])
            XCTAssertEqual(pending.map(\.receiptID.text), [Self.cafe, Self.gone])
            XCTAssertEqual(try Catalog.syncState(db, try XCTUnwrap(ReceiptID(Self.pharmacy)))?.changeTag, "tag1")
        }
        XCTAssertEqual(try vault.list().map(\.id), (1...3).map { String(format: "%08x-0000-4000-8000-%012x", $0, $0) } + [Self.pharmacy, Self.cafe])
        XCTAssertEqual(try vault.search("amoxicillin").map(\.receipt.id).sorted(), [Self.pharmacy, Self.cafe])
        XCTAssertEqual(try vault.show(Self.cafe).attachments.map(\.filename), ["bill.txt", "rx-copy.txt"])
        // A unique prefix of at least 8 characters, either case, odd or even, names its receipt.
        for prefix in ["22222222", "22222222-2", "22222222-22", "22222222-2222-4222-8222-22222222222", Self.cafe.uppercased()] {
            XCTAssertEqual(try vault.show(prefix).id, Self.cafe, prefix)
        }
        for prefix in ["2222222", "22222222-3", "222222222", "22222222-2222-4222-8222-2222222222222"] {
            XCTAssertThrowsError(try vault.show(prefix), prefix)
        }
        XCTAssertThrowsError(try vault.show("0000000")) { XCTAssertTrue("\($0)".contains("at least its first 8"), "\($0)") }
        // Writers go on: the new rows hold bytes, the outbox numbers on from where it was.
        let added = try vault.importFiles([try folder.write("in/new.txt", "a receipt imported after the migration")]).imported[0].id
        try vault.remove([Self.pharmacy])
        try vault.catalog.read { db in
            XCTAssertEqual(try Self.types(db), ["blob16", "blob16", "blob16", "blob16"])
            XCTAssertEqual(try Int64.fetchOne(db, sql: "SELECT rowNumber FROM receipts WHERE id = ?", arguments: [added]), 7)
            XCTAssertEqual(try Int64.fetchOne(db, sql: "SELECT min(seq) FROM changes WHERE receiptID = ?", arguments: [added]), 8)
        }
        try vault.close()
        let check = try await Vault.fsck(at: path)
        XCTAssertTrue(check.ok, "\(check.problems)")
    }

    /// An id an older pull stored in upper case becomes the canonical lowercase id, in every table.
    func testAnIDStoredInUpperCaseBecomesItsLowercaseID() async throws {
        let path = folder.file("vault")
        try Self.versionTwelveVault(path) { db in
            for (table, column) in Self.tables {
                try db.execute(sql: "UPDATE \(table) SET \(column) = ? WHERE \(column) = ?", arguments: [Self.shouted, Self.cafe])
            }
        }
        let vault = try Vault.open(at: path)
        try vault.catalog.read { db in
            for (table, column) in Self.tables {
                XCTAssertEqual(try String.fetchAll(db, sql: "SELECT DISTINCT \(ReceiptID.shown(column)) FROM \(table) WHERE \(column) = ?",
                                                   arguments: [ReceiptID(Self.shouted)]), [Self.shouted.lowercased()], table)
            }
        }
        XCTAssertEqual(try vault.list().map(\.id), [Self.pharmacy, Self.shouted.lowercased()])
        XCTAssertEqual(try vault.show("cafecafe").attachments.map(\.filename), ["bill.txt", "rx-copy.txt"])
        try vault.close()
    }

    /// What cannot be converted is refused in one line naming the table and the value(s); the
    /// catalog file is byte for byte what it was (still version 12), and a later open says so again.
    func testAnIDThatIsNoUUIDOrOneIDInTwoCasesIsRefusedAndTheFileLeftAsItWas() async throws {
        let cases: [(String, String)] = [
            ("INSERT INTO changes(receiptID, zone, kind, at) VALUES ('banana', 'personal', 'upsert', 9)",
             "table changes holds the receipt id 'banana', which is no UUID (migration v14-receipt-id-keys)"),
            ("INSERT INTO receipts(id, zone, tags, createdAt, modifiedAt) VALUES ('\(Self.shouted)', 'personal', '[]', 1, 1), "
                + "(lower('\(Self.shouted)'), 'personal', '[]', 1, 1)",
             "table receipts holds the receipt ids '\(Self.shouted)' and '\(Self.shouted.lowercased())', one id in two cases"),
        ]
        for (index, (insert, expected)) in cases.enumerated() {
            let path = folder.file("vault\(index)")
            try Self.versionTwelveVault(path) { db in try db.execute(sql: insert) }
            let catalogPath = FileSystem.join(path, Catalog.fileName)
            let bytes = try Data(contentsOf: URL(fileURLWithPath: catalogPath))
            for _ in 0..<2 {
                XCTAssertThrowsError(try Vault.open(at: path)) { error in
                    XCTAssertTrue("\(error)".contains(expected), "\(error)")
                    XCTAssertFalse("\(error)".contains("\n"), "\(error)")
                }
                XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: catalogPath)), bytes)
            }
            let raw = try DatabaseQueue(path: catalogPath)
            let (version, types) = try await raw.read { db in (try Int.fetchOne(db, sql: "PRAGMA user_version"), try Self.types(db)) }
            XCTAssertEqual(version, 14)
            XCTAssertEqual(types.filter { $0.contains("blob") }, [])
            try raw.close()
        }
    }
}
