import BlobStore
import Foundation
import GRDB
@testable import ReceiptCatalog
import ReceiptText
@testable import ReceiptVault
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Catalog v12 (`BlobKeys`): a catalog as version 11 wrote it, blob addresses as 64 hex digits, is
/// converted when first opened, in one transaction, to addresses as their 32 bytes in every table
/// that holds one; every row, search hit and snippet stays as it was. An address that is no 64 hex
/// digits stops the migration with the file untouched; a migration killed mid-way leaves the
/// catalog as it was before it.
final class BlobKeysMigrationTests: XCTestCase {
    var folder: TemporaryFolder!

    override func setUp() { folder = TemporaryFolder("receipt-blob-keys") }
    override func tearDown() { folder = nil }

    static let addressTables = ["blobs", "attachments", "blobText", "importCache"]
    static let pharmacy = "11111111-1111-4111-8111-111111111111"
    static let cafe = "22222222-2222-4222-8222-222222222222"
    static let rx = "amoxicillin 500 mg, 21 capsules, sourdough\n"
    static let bill = "flat white 3.40, sourdough toast\n"

    /// `count` receipts written by version 11's schema and triggers through SQL: receipt `i` holds one
    /// inline file whose text was read, and the first two also share `rx`. `extra` runs last.
    static func versionElevenVault(_ path: String, receipts count: Int = 0, extra: (Database) throws -> Void = { _ in }) throws {
        let queue = try ReceiptRowsMigrationTests.olderCatalog(at: path, upTo: "v11-search-text-once", version: 12)
        let numbers = "WITH RECURSIVE n(i) AS (SELECT 1 WHERE \(count) > 0 UNION ALL SELECT i + 1 FROM n WHERE i < \(count))"
        try queue.write { db in
            let hash = DatabaseFunction("test_sha256", argumentCount: 1, pure: true) { values in
                SHA256Hasher.hash([UInt8]((Data.fromDatabaseValue(values[0]) ?? Data()))).hex
            }
            db.add(function: hash)
            try db.execute(sql: "INSERT INTO zones(name, createdAt) VALUES ('personal', 1)")
            for (id, merchant, date) in [(Self.pharmacy, "Apotheke", "2025-03-04"), (Self.cafe, "Café Zeitgeist", "2025-03-05")] {
                try db.execute(sql: """
                    INSERT INTO receipts(id, zone, merchant, date, tags, createdAt, modifiedAt) VALUES (?, 'personal', ?, ?, '["fsa"]', 1, 2)
                    """, arguments: [id, merchant, date])
            }
            try db.execute(sql: """
                \(numbers)
                INSERT INTO receipts(id, zone, merchant, date, total, currency, tags, createdAt, modifiedAt)
                SELECT printf('%08x-0000-4000-8000-%012x', i, i), 'personal', 'Shop ' || (i % 97), '2024-01-01', '1.00', 'EUR', '[]', 1, 2 FROM n
                """)
            // Files: the two fixed ones, then one per generated receipt (its row number is 2 + i).
            try db.execute(sql: """
                CREATE TEMP TABLE files AS SELECT 1 AS row, CAST(? AS BLOB) AS bytes, 'rx.txt' AS name
                    UNION ALL SELECT 2, CAST(? AS BLOB), 'bill.txt' UNION ALL SELECT 2, CAST(? AS BLOB), 'rx-copy.txt';
                \(numbers)
                INSERT INTO files SELECT 2 + i, CAST('receipt ' || i || ' bread ' || (i * 7919 % 1000) || ' sourdough' AS BLOB), 'scan' || i || '.txt' FROM n;
                INSERT OR IGNORE INTO blobs(sha256, size, storedSize, encoding, inline, createdAt)
                    SELECT test_sha256(bytes), length(bytes), length(bytes), 'identity', bytes, 1 FROM files ORDER BY row;
                INSERT INTO attachments(receiptRow, receiptID, sha256, filename, mediaType, position, size)
                    SELECT f.row, r.id, test_sha256(f.bytes), f.name, 'text/plain', 0, length(f.bytes)
                    FROM files f JOIN receipts r ON r.rowNumber = f.row WHERE f.name <> 'rx-copy.txt';
                INSERT INTO attachments(receiptRow, receiptID, sha256, filename, mediaType, position, size)
                    SELECT f.row, r.id, test_sha256(f.bytes), f.name, 'text/plain', 1, length(f.bytes)
                    FROM files f JOIN receipts r ON r.rowNumber = f.row WHERE f.name = 'rx-copy.txt';
                INSERT OR IGNORE INTO blobText(sha256, extractor, state, text, extractedAt)
                    SELECT test_sha256(bytes), 'plain-1', 'text', CAST(bytes AS TEXT), 5 FROM files;
                INSERT INTO importCache(path, device, inode, size, mtimeNs, sha256)
                    SELECT '/in/' || name, 1, row, length(bytes), 7, test_sha256(bytes) FROM files WHERE row <= 2;
                DROP TABLE files;
                """, arguments: [Self.rx, Self.bill, Self.rx])
            try extra(db)
            db.remove(function: hash)
        }
        try queue.close()
    }

    /// What a catalog holds, addresses as hex whatever their type: every table's rows in key order.
    /// Texts as their readers read them (since v13 a text that is its blob's inline bytes is stored once).
    static func contents(_ db: Database) throws -> [String] {
        let texts = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = '\(TextOnce.view)')")! ? TextOnce.view : "blobText"
        return try ["SELECT rowid, lower(hex(sha256)), size, storedSize, encoding, hex(inline), createdAt FROM blobs ORDER BY rowid",
             "SELECT receiptRow, lower(hex(sha256)), \(ReceiptID.shown("receiptID")), filename, mediaType, position, size FROM attachments ORDER BY 1, 2",
             "SELECT lower(hex(sha256)), extractor, state, text, error, extractedAt FROM \(texts) ORDER BY 1",
             "SELECT path, device, inode, size, mtimeNs, lower(hex(sha256)) FROM importCache ORDER BY path",
             "SELECT * FROM keptCounts", "SELECT * FROM keptTextCounts ORDER BY 1, 2"].flatMap { sql in
            try Row.fetchAll(db, sql: sql).map { row in row.databaseValues.map { "\($0)" }.joined(separator: " ") }
        }.map { $0.replacingOccurrences(of: "\"", with: "") }
    }

    /// The search index's hits and snippets for `words`, straight from FTS5.
    static func hits(_ db: Database, _ words: String) throws -> [String] {
        try Row.fetchAll(db, sql: """
            SELECT rowid, snippet(receiptSearch, -1, '[', ']', '…', 12) FROM receiptSearch WHERE receiptSearch MATCH ? ORDER BY rowid
            """, arguments: [words]).map { "\($0[0] as Int64) \($0[1] as String)" }
    }

    static func types(_ db: Database) throws -> [String] {
        try addressTables.map { table in
            try String.fetchAll(db, sql: "SELECT DISTINCT typeof(sha256) || length(sha256) FROM \(table) ORDER BY 1").joined(separator: ",")
        }
    }

    func testAVersionElevenCatalogMigratesToAddressesAsBytesKeepingEveryRowHitAndSnippet() async throws {
        let path = folder.file("vault")
        try Self.versionElevenVault(path, receipts: 3)
        let raw = try DatabaseQueue(path: FileSystem.join(path, Catalog.fileName))
        let (before, hitsBefore, typesBefore) = try await raw.read { db in
            (try Self.contents(db),
             try ["sourdough", "amoxicillin", "zeitgeist", "scan2"].map { try Self.hits(db, $0) }, try Self.types(db))
        }
        XCTAssertEqual(typesBefore, ["text64", "text64", "text64", "text64"])
        try raw.close()
        let vault = try Vault.open(at: path)
        try vault.catalog.read { db in
            XCTAssertEqual(try Self.types(db), ["blob32", "blob32", "blob32", "blob32"])
            XCTAssertTrue(try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations").contains("v12-blob-keys"))
            // v13 adds the two triggers that give a blob's inline bytes back to its text (`TextOnce`).
            XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE type = 'trigger'"), 31)
            XCTAssertEqual(try ["sourdough", "amoxicillin", "zeitgeist", "scan2"].map { try Self.hits(db, $0) }, hitsBefore)
            // Every row as it was, its address now the bytes the digits spelled.
            let after = try Self.contents(db)
            XCTAssertEqual(after.count, before.count)
            XCTAssertEqual(after, before.map(Self.asciiHexToHex))
        }
        XCTAssertEqual(try vault.catalog.searchIndexProblems(), [])
        XCTAssertEqual(try vault.search("amoxicillin").map(\.receipt.id).sorted(), [Self.pharmacy, Self.cafe])
        XCTAssertEqual(try vault.search("amoxicillin").first?.snippet.contains("[amoxicillin]"), true)
        XCTAssertEqual(try vault.show(Self.cafe).attachments.map(\.filename), ["bill.txt", "rx-copy.txt"])
        XCTAssertEqual(try vault.show(Self.cafe).attachments.last?.sha256, TestData.sha256(Array(Self.rx.utf8)))
        let stats = try vault.stats()
        XCTAssertEqual([stats.receipts, stats.attachments, stats.blobs], [5, 6, 5])
        // Every writer goes on: import (and the stat cache), attach, detach, text, rm.
        let added = try folder.write("in/new.txt", "a receipt imported after the migration")
        let newID = try XCTUnwrap(try vault.importFiles([added]).imported.first?.id)
        _ = try vault.attach(newID.text, paths: [try folder.write("in/more.txt", "sourdough again")])
        _ = try vault.detach(Self.cafe, blob: TestData.sha256(Array(Self.rx.utf8)))
        try vault.remove([Self.pharmacy])
        _ = try vault.indexText(tools: ExtractorTools(pdftotext: nil, pdftoppm: nil, tesseract: nil, languages: []))
        XCTAssertEqual(try vault.search("amoxicillin").map(\.receipt.id), [])
        XCTAssertEqual(try vault.search("again").map(\.receipt.id), [newID.text])
        XCTAssertEqual(try vault.catalog.searchIndexProblems(), [])
        XCTAssertEqual(try vault.collectGarbage(graceSeconds: 0).removedBlobs, 1)
        try vault.close()
        let check = try await Vault.fsck(at: path)
        XCTAssertTrue(check.ok, "\(check.problems)")

        // fsck --repair still rebuilds a damaged index from the stored text.
        let damaged = try Vault.open(at: path)
        try damaged.catalog.write { db in
            try db.execute(sql: "DROP TRIGGER receiptSearch_text_before_update; DROP TRIGGER receiptSearch_text_update")
            try db.execute(sql: "UPDATE blobText SET text = 'espresso doppio', inlineStart = NULL, inlineLength = NULL WHERE sha256 = ?",
                           arguments: [BlobID(hex: TestData.sha256(Array(Self.bill.utf8)))])
        }
        try damaged.close()
        let found = try await Vault.fsck(at: path)
        XCTAssertFalse(found.ok)
        let repaired = try await Vault.fsck(at: path, options: FsckOptions(repair: true))
        XCTAssertTrue(repaired.ok, "\(repaired.problems)")
        let reopened = try Vault.open(at: path)
        XCTAssertEqual(try reopened.catalog.searchIndexProblems(), [])
        XCTAssertEqual(try reopened.search("doppio").map(\.receipt.id), [Self.cafe])
        try reopened.close()
    }

    /// `hex()` of v11's text digits is the hex of their ASCII codes: the digits themselves, once decoded.
    static func asciiHexToHex(_ line: String) -> String {
        line.split(separator: " ", omittingEmptySubsequences: false).map { word -> String in
            guard word.count == 128, word.allSatisfy(\.isHexDigit) else { return String(word) }
            let bytes = stride(from: 0, to: 128, by: 2).map { i -> UInt8 in
                UInt8(word.dropFirst(i).prefix(2), radix: 16) ?? 0
            }
            return String(decoding: bytes, as: UTF8.self)
        }.joined(separator: " ")
    }

    /// A value that is no address: the migration names the table and the value, and the catalog file
    /// is byte for byte what it was (still version 11).
    func testAnAddressThatIsNotSixtyFourHexDigitsIsRefusedAndTheFileLeftAsItWas() async throws {
        let path = folder.file("vault")
        try Self.versionElevenVault(path) { db in
            try db.execute(sql: "INSERT INTO importCache(path, device, inode, size, mtimeNs, sha256) VALUES ('/in/odd.txt', 1, 9, 3, 7, 'deadbeef')")
        }
        let catalogPath = FileSystem.join(path, Catalog.fileName)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: catalogPath))
        XCTAssertThrowsError(try Vault.open(at: path)) { error in
            let message = "\(error)"
            XCTAssertTrue(message.contains("table importCache holds the blob address 'deadbeef', which is not 64 hexadecimal digits"), message)
            XCTAssertFalse(message.contains("\n"), message)
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: catalogPath)), bytes)
        let raw = try DatabaseQueue(path: catalogPath)
        let (version, types) = try await raw.read { db in (try Int.fetchOne(db, sql: "PRAGMA user_version"), try Self.types(db)) }
        XCTAssertEqual(version, 12)
        XCTAssertEqual(types, ["text64", "text64", "text64", "text64,text8"])
        try raw.close()
        // The repair rebuilds the catalog from what it can read (the stat cache is not kept).
        let repaired = try await Vault.fsck(at: path, options: FsckOptions(repair: true))
        XCTAssertTrue(repaired.ok, "\(repaired.problems)")
        let vault = try Vault.open(at: path)
        XCTAssertEqual(try vault.list().map(\.id), [Self.pharmacy, Self.cafe])
        XCTAssertEqual(try vault.show(Self.cafe).attachments.map(\.filename), ["bill.txt", "rx-copy.txt"])
        XCTAssertEqual(try vault.search("apotheke").map(\.receipt.id), [Self.pharmacy])
        try vault.close()
    }
}
