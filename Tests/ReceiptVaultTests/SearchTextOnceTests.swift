import BlobStore
import Foundation
import GRDB
@testable import ReceiptCatalog
import ReceiptText
@testable import ReceiptVault
import TestSupport
import XCTest

/// Catalog v11 (`SearchIndex`): the search index keeps no copy of the text; it reads each receipt's
/// document from `receipts`, `attachments` and `blobText`. FTS5's integrity-check (rank 1) makes
/// every document again from the stored text and compares it with the index, so it fails if a
/// trigger removed a document with other values than it was indexed with. It must pass after every
/// kind of change: by the row triggers, by a writer holding the index, by a ledgered import.
final class SearchTextOnceTests: XCTestCase {
    var folder: TemporaryFolder!
    var vault: Vault!
    let plain = ExtractorTools(pdftotext: nil, pdftoppm: nil, tesseract: nil, languages: [])

    override func setUpWithError() throws {
        folder = TemporaryFolder("receipt-text-once")
        vault = try Vault.create(at: folder.file("vault"), inlineThreshold: 1024, compression: .none).vault
    }

    override func tearDownWithError() throws {
        try vault?.close()
        vault = nil
        folder = nil
    }

    func assertConsistent(_ step: String, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(try vault.catalog.searchIndexProblems(), [], step, file: file, line: line)
    }

    func found(_ words: String) throws -> [String] {
        try vault.search(words).map(\.receipt.id).sorted()
    }

    func blob(_ text: String) throws -> BlobID {
        try XCTUnwrap(BlobID(hex: TestData.sha256(Array(text.utf8))))
    }

    /// Two receipts with their texts read: a café's (two files) and a hardware store's.
    func twoReceipts() throws -> (cafe: String, hardware: String) {
        let ids = try vault.importFiles([try folder.write("in/cafe.txt", "Corner Cafe\nflat white 3.40\n"),
                                         try folder.write("in/hardware.txt", "Hardware Store\nhammer 12.00\n")]).imported.map(\.id.text)
        _ = try vault.attach(ids[0], paths: [try folder.write("in/tip.txt", "gratuity 0.60\n")])
        XCTAssertEqual(try vault.indexText(tools: plain).extracted, 3)
        try assertConsistent("after import, attach and index")
        return (ids[0], ids[1])
    }

    func testTheIndexKeepsNoCopyAndIsCheckedAgainstTheStoredText() throws {
        let (cafe, _) = try twoReceipts()
        let tables = try vault.catalog.read { db in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE name GLOB 'receiptSearch*'") }
        XCTAssertFalse(tables.contains("receiptSearch_content"), "\(tables)")
        XCTAssertEqual(try vault.search("white").first?.snippet.contains("[white]"), true, "snippets read the stored text")

        // A text changed behind the triggers' back: the index no longer holds what the check makes from it.
        try vault.catalog.write { db in
            try db.execute(sql: "DROP TRIGGER receiptSearch_text_before_update; DROP TRIGGER receiptSearch_text_update")
            try db.execute(sql: "UPDATE blobText SET text = 'espresso doppio', inlineStart = NULL, inlineLength = NULL WHERE sha256 = ?",
                           arguments: [try blob("Corner Cafe\nflat white 3.40\n")])
        }
        let problems = try vault.catalog.searchIndexProblems()
        XCTAssertTrue(problems.contains { $0.contains("the search index is damaged") }, "\(problems)")
        try vault.catalog.rebuildSearchIndex()
        try assertConsistent("after the rebuild")
        XCTAssertEqual(try found("doppio"), [cafe])
        XCTAssertEqual(try found("white"), [])
    }

    func testEveryChangeByTheTriggersKeepsTheIndexExact() throws {
        let (cafe, hardware) = try twoReceipts()
        _ = try vault.edit(cafe, ReceiptMetadata(merchant: "Kaffeehaus", note: "with a client"))
        try assertConsistent("after edit")
        XCTAssertEqual(try found("kaffeehaus client"), [cafe])
        try vault.catalog.write { db in
            try db.execute(sql: "UPDATE attachments SET filename = 'espresso-bill.txt' WHERE filename = 'cafe.txt'")
        }
        try assertConsistent("after an attachment renamed")
        XCTAssertEqual(try found("espresso"), [cafe])

        let tip = try blob("gratuity 0.60\n")
        try vault.catalog.transaction { w in try w.storeText(of: tip, version: "test-2", text: "service charge", error: nil) }
        try assertConsistent("after a text replaced")
        XCTAssertEqual(try found("service"), [cafe])
        XCTAssertEqual(try found("gratuity"), [])
        try vault.catalog.write { db in try db.execute(sql: "DELETE FROM blobText WHERE sha256 = ?", arguments: [tip]) }
        try assertConsistent("after a text deleted")
        XCTAssertEqual(try found("service"), [])
        try vault.catalog.transaction { w in try w.storeText(of: tip, version: "test-3", text: nil, error: "unreadable") }
        try assertConsistent("after a failure stored")
        try vault.catalog.transaction { w in try w.storeText(of: tip, version: "test-4", text: "tip on the card", error: nil) }
        try assertConsistent("after a text stored again")
        XCTAssertEqual(try found("card"), [cafe])

        // One file in two receipts: a text of it is in both documents.
        _ = try vault.attach(hardware, paths: [try folder.write("in/tip-again.txt", "gratuity 0.60\n")])
        try assertConsistent("after a file attached to a second receipt")
        XCTAssertEqual(try found("card"), [cafe, hardware].sorted())
        try vault.catalog.transaction { w in try w.storeText(of: tip, version: "test-5", text: "tip in cash", error: nil) }
        try assertConsistent("after the shared file's text replaced")
        XCTAssertEqual(try found("cash"), [cafe, hardware].sorted())
        _ = try vault.detach(cafe, blob: tip.hex)
        try assertConsistent("after detach")
        XCTAssertEqual(try found("cash"), [hardware])
        _ = try vault.remove([hardware])
        try assertConsistent("after rm")
        XCTAssertEqual(try found("cash"), [])
        XCTAssertEqual(try found("white"), [cafe])
    }

    /// A writer holding the index changes receipts indexed before its transaction: each loses its
    /// document at its first change, however many follow, and is indexed once before the commit.
    func testAWriterHoldingTheIndexKeepsItExact() throws {
        let (cafe, hardware) = try twoReceipts()
        let tip = try blob("gratuity 0.60\n")
        try vault.catalog.transaction { w in
            try w.holdingSearchIndex {
                try w.db.execute(sql: "UPDATE receipts SET merchant = 'Held Cafe' WHERE id = ?", arguments: [ReceiptID(cafe)])
                try w.db.execute(sql: "UPDATE receipts SET note = 'changed twice' WHERE id = ?", arguments: [ReceiptID(cafe)])
                try w.db.execute(sql: "UPDATE attachments SET filename = 'pourboire.txt' WHERE sha256 = ?", arguments: [tip])
                try w.storeText(of: tip, version: "test-2", text: "service charge", error: nil)
                try w.db.execute(sql: "DELETE FROM attachments WHERE filename = 'cafe.txt'")
                try w.db.execute(sql: "UPDATE receipts SET merchant = 'Gone Store' WHERE id = ?", arguments: [ReceiptID(hardware)])
                try w.db.execute(sql: "DELETE FROM receipts WHERE id = ?", arguments: [ReceiptID(hardware)])
            }
        }
        try assertConsistent("after the held transaction")
        XCTAssertEqual(try found("held twice pourboire service"), [cafe])
        XCTAssertEqual(try found("white"), [])
        XCTAssertEqual(try found("hammer"), [])
        let pending = try vault.catalog.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM searchPending") }
        XCTAssertEqual(pending, 0)
    }

    /// A ledgered import (its row triggers suspended) that changes receipts indexed before it: their
    /// documents go before the rows change, while the index can still be told what they were.
    func testALedgeredImportChangingIndexedReceiptsKeepsTheIndexExact() throws {
        let (cafe, hardware) = try twoReceipts()
        for name in ["a", "b", "c"] { _ = try folder.write("in/\(name)-extra.txt", "page \(name) of three\n") }
        let manifest = try folder.write("in/more.csv", """
            path,id,merchant
            a-extra.txt,\(cafe),Bigger Cafe
            b-extra.txt,\(hardware),Bigger Hardware
            c-extra.txt,,New One
            """ + "\n")
        XCTAssertEqual(try vault.importManifest(manifest).imported.count, 3)
        try assertConsistent("after the ledgered import")
        XCTAssertEqual(try found("bigger white"), [cafe])
        XCTAssertEqual(try found("bigger hammer"), [hardware])
        XCTAssertEqual(try found("extra").count, 3)
        XCTAssertEqual(try vault.indexText(tools: plain).extracted, 3)
        XCTAssertEqual(try found("three").count, 3)
        try assertConsistent("after the new file's text")
    }

    /// A vault whose catalog version 10 made (the index with its own copy of the text): two receipts,
    /// one with a file whose text was read.
    func versionTenVault(at path: String) throws {
        let text = "amoxicillin 500 mg, 21 capsules\n"
        let sha = TestData.sha256(Array(text.utf8))
        let queue = try ReceiptRowsMigrationTests.olderCatalog(at: path, upTo: "v10-text-signatures", version: 11)
        try queue.write { db in
            try db.execute(sql: "INSERT INTO zones(name, createdAt) VALUES ('personal', 1)")
            try db.execute(sql: "INSERT INTO blobs(sha256, size, storedSize, encoding, inline, createdAt) VALUES (?, ?, ?, 'identity', ?, 1)",
                           arguments: [sha, text.utf8.count, text.utf8.count, Data(text.utf8)])
            for (id, merchant) in [("11111111-1111-4111-8111-111111111111", "Apotheke"), ("22222222-2222-4222-8222-222222222222", "Café Zeitgeist")] {
                try db.execute(sql: """
                    INSERT INTO receipts(id, zone, merchant, date, tags, createdAt, modifiedAt) VALUES (?, 'personal', ?, '2025-03-04', '["fsa"]', 1, 2)
                    """, arguments: [id, merchant])
            }
            try db.execute(sql: """
                INSERT INTO attachments(receiptRow, receiptID, sha256, filename, mediaType, position, size)
                VALUES (1, '11111111-1111-4111-8111-111111111111', ?, 'rx.txt', 'text/plain', 0, ?)
                """, arguments: [sha, text.utf8.count])
            try db.execute(sql: "INSERT INTO blobText(sha256, extractor, state, text, extractedAt) VALUES (?, 'plain-1', 'text', ?, 5)",
                           arguments: [sha, text])
            XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT count(*) FROM receiptSearch_content"), 2, "v10 kept a copy")
        }
        try queue.close()
    }

    /// A catalog of version 10 (the index with its own copy of the text) migrates to the index that
    /// reads the stored text, in one transaction, and everything it held is found as before.
    func testAVersionTenCatalogMigratesToAnIndexWithoutACopy() async throws {
        let path = folder.file("old")
        try versionTenVault(at: path)
        let old = try Vault.open(at: path)
        try old.catalog.read { db in
            XCTAssertEqual(try Int.fetchOne(db, sql: "PRAGMA user_version"), Catalog.schemaVersion)
            XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE name = 'receiptSearch_content'"), 0)
        }
        XCTAssertEqual(try old.catalog.searchIndexProblems(), [])
        XCTAssertEqual(try old.search("amoxicillin").map(\.receipt.merchant), ["Apotheke"])
        XCTAssertEqual(try old.search("amoxicillin").first?.snippet.contains("[amoxicillin]"), true)
        XCTAssertEqual(try old.search("cafe").map(\.receipt.merchant), ["Café Zeitgeist"])
        XCTAssertEqual(try old.search("rx").map(\.receipt.merchant), ["Apotheke"])
        try old.close()
        let check = try await Vault.fsck(at: path)
        XCTAssertTrue(check.ok, "\(check.problems)")
    }
}
