import BlobStore
import Foundation
import GRDB
@testable import ReceiptCatalog
import ReceiptText
@testable import ReceiptVault
import TestSupport
import XCTest

/// Catalog v13 (`TextOnce`): the text of a small plain-text file is its inline bytes, stored once in
/// the blob's row; every reader (search and its snippets, `show --text`, a sync's texts, fsck and its
/// rebuild) reads it as before, and it goes back to `blobText` before the bytes leave the row.
final class PlainTextOnceTests: XCTestCase {
    var folder: TemporaryFolder!
    var vault: Vault!
    let plain = ExtractorTools(pdftotext: nil, pdftoppm: nil, tesseract: nil, languages: [])
    let cafeFile = "  Corner Cafe\nflat white 3.40\n"
    /// The extractor's text of it: the file's bytes without the whitespace around them.
    let cafeText = "Corner Cafe\nflat white 3.40"

    override func setUpWithError() throws {
        folder = TemporaryFolder("receipt-plain-text-once")
        vault = try Vault.create(at: folder.file("vault"), inlineThreshold: 1024, compression: .none).vault
    }

    override func tearDownWithError() throws {
        try vault?.close()
        vault = nil
        folder = nil
    }

    func blob(_ text: String) throws -> BlobID {
        try XCTUnwrap(BlobID(hex: TestData.sha256(Array(text.utf8))))
    }

    /// Each text row as stored: (stored text, whether it is the blob's inline bytes).
    func storedRows() throws -> [String] {
        try vault.catalog.read { db in
            try Row.fetchAll(db, sql: "SELECT text, inlineStart IS NOT NULL FROM blobText ORDER BY sha256").map { "\($0[0] as String)|\($0[1] as Int)" }
        }
    }

    func importCafe() throws -> String {
        let id = try XCTUnwrap(try vault.importFiles([try folder.write("in/cafe.txt", cafeFile)]).imported.first).id.text
        XCTAssertEqual(try vault.indexText(tools: plain).extracted, 1)
        return id
    }

    func testAPlainTextReceiptsTextIsStoredOnceAndReadAsBefore() async throws {
        let cafe = try importCafe()
        XCTAssertEqual(try storedRows(), ["|1"], "the text is the blob's inline bytes: not stored again")
        XCTAssertEqual(try vault.search("white").map(\.receipt.id), [cafe])
        XCTAssertEqual(try vault.search("white").first?.snippet.contains("[white]"), true)
        XCTAssertEqual(try vault.extractedTexts(cafe).map(\.text), [cafeText], "show --text")
        let sha = try blob(cafeFile)
        try vault.catalog.read { db in
            XCTAssertEqual(try Catalog.storedText(db, sha, version: TextExtractor.version), StoredText(text: cafeText, error: nil), "what a sync uploads")
            XCTAssertEqual(try Catalog.texts(db, [sha]), [sha: cafeText])
        }
        XCTAssertEqual(try vault.catalog.searchIndexProblems(), [])
        try vault.catalog.rebuildSearchIndex()
        XCTAssertEqual(try vault.catalog.searchIndexProblems(), [])
        XCTAssertEqual(try vault.search("flat white").first?.snippet.contains("[flat] [white]"), true, "after fsck --repair's rebuild")
        try vault.close()
        vault = nil
        let check = try await Vault.fsck(at: folder.file("vault"))
        XCTAssertTrue(check.ok, "\(check.problems)")
    }

    /// A text received from a sync (`storeText` as the pull stores it) is stored once too.
    func testATextStoredForAnInlineBlobIsStoredOnceAndAnotherTextIsKept() throws {
        _ = try vault.importFiles([try folder.write("in/cafe.txt", cafeFile)])
        let sha = try blob(cafeFile)
        try vault.catalog.transaction { w in try w.storeText(of: sha, version: TextExtractor.version, text: cafeText, error: nil) }
        XCTAssertEqual(try storedRows(), ["|1"])
        try vault.catalog.transaction { w in try w.storeText(of: sha, version: TextExtractor.version, text: "Corner Café", error: nil) }
        XCTAssertEqual(try storedRows(), ["Corner Café|0"], "a text that is not the bytes is stored as it is")
        try vault.catalog.transaction { w in try w.storeText(of: sha, version: TextExtractor.version, text: nil, error: "unreadable") }
        XCTAssertEqual(try storedRows(), ["|0"])
        XCTAssertEqual(try vault.catalog.searchIndexProblems(), [])
    }

    /// The bytes leave the blob's row (fsck records the blob as a file, gc deletes the row): the text
    /// goes back to `blobText` first, and the search index stays the one the check makes again.
    func testTheTextGoesBackBeforeTheBlobsBytesLeaveItsRow() throws {
        let cafe = try importCafe()
        let sha = try blob(cafeFile)
        try vault.catalog.transaction { w in
            try w.rerecordBlob(sha, size: nil, storedSize: Int64(cafeFile.utf8.count), encoding: .identity)
        }
        XCTAssertEqual(try storedRows(), ["\(cafeText)|0"])
        XCTAssertEqual(try vault.catalog.searchIndexProblems(), [])
        XCTAssertEqual(try vault.search("white").map(\.receipt.id), [cafe])

        let tea = "Tea Room\nearl grey 2.80\n"
        let teaID = try XCTUnwrap(try vault.importFiles([try folder.write("in/tea.txt", tea)]).imported.first).id.text
        XCTAssertEqual(try vault.indexText(tools: plain).extracted, 1)
        _ = try vault.remove([teaID])
        let teaSHA = try blob(tea)
        XCTAssertTrue(try vault.catalog.transaction { w in try w.deleteBlobIfUnreferenced(teaSHA) })
        try vault.catalog.read { db in
            XCTAssertEqual(try Row.fetchOne(db, sql: "SELECT text, inlineStart IS NOT NULL FROM blobText WHERE sha256 = ?", arguments: [teaSHA])
                .map { "\($0[0] as String)|\($0[1] as Int)" }, "Tea Room\nearl grey 2.80|0", "a text outliving its blob keeps its text")
        }
        XCTAssertEqual(try vault.catalog.searchIndexProblems(), [])
    }

    /// The CHECK: a row marked as its blob's bytes holds no text of its own and is a text.
    func testARowMarkedAsTheBlobsBytesHoldsNoOtherText() throws {
        _ = try importCafe()
        let sha = try blob(cafeFile)
        for change in ["text = 'x'", "state = 'failed'", "inlineStart = -1", "inlineLength = NULL"] {
            XCTAssertThrowsError(try vault.catalog.write { db in
                try db.execute(sql: "UPDATE blobText SET \(change) WHERE sha256 = ?", arguments: [sha])
            }, change)
        }
    }

    /// A catalog of version 12: the rows whose text is their blob's inline bytes are converted in the
    /// migration, the others kept; every hit and snippet is the same, fsck finds nothing.
    func testAVersionTwelveCatalogStoresPlainTextsOnce() async throws {
        let path = folder.file("old")
        let (rx, scan) = ("amoxicillin 500 mg, 21 capsules\n", "scan of a tractor invoice")
        let scanBytes: [UInt8] = [0x89] + Array("PNG not the text".utf8)
        let (rxSHA, scanSHA) = (try blob(rx), try XCTUnwrap(BlobID(hex: TestData.sha256(scanBytes))))
        let queue = try ReceiptRowsMigrationTests.olderCatalog(at: path, upTo: "v12-blob-keys", version: 13)
        try await queue.write { db in
            try db.execute(sql: "INSERT INTO zones(name, createdAt) VALUES ('personal', 1)")
            try db.execute(sql: "INSERT INTO blobs(sha256, size, storedSize, encoding, inline, createdAt) VALUES (?, ?, ?, 'identity', ?, 1)",
                           arguments: [rxSHA, rx.utf8.count, rx.utf8.count, Data(rx.utf8)])
            // A scan's bytes are not its text: its text stays where it is.
            try db.execute(sql: "INSERT INTO blobs(sha256, size, storedSize, encoding, inline, createdAt) VALUES (?, ?, ?, 'identity', ?, 1)",
                           arguments: [scanSHA, scanBytes.count, scanBytes.count, Data(scanBytes)])
            for (id, merchant) in [("11111111-1111-4111-8111-111111111111", "Apotheke"), ("22222222-2222-4222-8222-222222222222", "Hof")] {
                try db.execute(sql: """
                    INSERT INTO receipts(id, zone, merchant, date, tags, createdAt, modifiedAt) VALUES (?, 'personal', ?, '2025-03-04', '[]', 1, 2)
                    """, arguments: [id, merchant])
            }
            try db.execute(sql: """
                INSERT INTO attachments(receiptRow, receiptID, sha256, filename, mediaType, position, size) VALUES
                    (1, '11111111-1111-4111-8111-111111111111', ?, 'rx.txt', 'text/plain', 0, ?),
                    (2, '22222222-2222-4222-8222-222222222222', ?, 'scan.png', 'image/png', 0, ?)
                """, arguments: [rxSHA, rx.utf8.count, scanSHA, scanBytes.count])
            for (sha, text) in [(rxSHA, rx), (scanSHA, scan)] {
                try db.execute(sql: "INSERT INTO blobText(sha256, extractor, state, text, extractedAt) VALUES (?, ?, 'text', ?, 5)",
                               arguments: [sha, TextExtractor.version, text])
            }
        }
        let hitsBefore = try await queue.read { db in try ["amoxicillin", "tractor", "rx"].map { try BlobKeysMigrationTests.hits(db, $0) } }
        try queue.close()

        let old = try Vault.open(at: path)
        try old.catalog.read { db in
            XCTAssertEqual(try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations").suffix(3), ["v13-plain-text-once", "v14-receipt-id-keys", "v15-signature-halves"])
            XCTAssertEqual(try ["amoxicillin", "tractor", "rx"].map { try BlobKeysMigrationTests.hits(db, $0) }, hitsBefore)
            XCTAssertEqual(try Row.fetchAll(db, sql: "SELECT text, inlineStart IS NOT NULL FROM blobText ORDER BY sha256 = ?", arguments: [scanSHA])
                .map { "\($0[0] as String)|\($0[1] as Int)" }, ["|1", "\(scan)|0"])
        }
        XCTAssertEqual(try old.catalog.searchIndexProblems(), [])
        XCTAssertEqual(try old.extractedTexts("11111111").map(\.text), [rx])
        XCTAssertEqual(try old.search("amoxicillin").first?.snippet.contains("[amoxicillin]"), true)
        try old.close()
        let check = try await Vault.fsck(at: path)
        XCTAssertTrue(check.ok, "\(check.problems)")
    }
}
