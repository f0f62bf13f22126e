import BlobStore
import Foundation
import GRDB
@testable import ReceiptCatalog
@testable import ReceiptVault
import TestSupport
import XCTest

/// Catalog v8 (`ReceiptRows`): a catalog as version 7 wrote it — attachments keyed by their
/// receipt's id, the triggers of v4/v5 — is migrated in place when first opened: every receipt keeps
/// its rowid as its row number, every attachment its receipt, position, name and size, the search
/// index and the kept counts stay exact, and every writer goes on with the new triggers.
final class ReceiptRowsMigrationTests: XCTestCase {
    var folder: TemporaryFolder!

    override func setUp() { folder = TemporaryFolder() }
    override func tearDown() { folder = nil }

    struct Planted {
        let cafe = "11111111-1111-4111-8111-111111111111"
        let pharmacy = "22222222-2222-4222-8222-222222222222"
        let bare = "33333333-3333-4333-8333-333333333333"
        let gone = "00000000-0000-4000-8000-000000000000"
        let shared: [UInt8] = Array("amoxicillin 500 mg, 21 capsules\n".utf8)
        let other: [UInt8] = Array("a second page of the cafe bill\n".utf8)
        let lost: [UInt8] = Array("the only copy of a receipt whose row is gone\n".utf8)
    }

    /// A vault whose catalog is the one version 7 made, holding `Planted` written through its own
    /// triggers. Returns the vault's path and each receipt's rowid.
    func versionSevenVault(orphan: Bool = false) throws -> (path: String, rowids: [String: Int64]) {
        let path = folder.file("vault")
        let p = Planted()
        let queue = try Self.olderCatalog(at: path, upTo: "v7-text-offer-index", version: 8, foreignKeys: !orphan)
        try queue.write { db in
            try db.execute(sql: "INSERT INTO zones(name, createdAt) VALUES ('personal', 1), ('taxes', 1)")
            for bytes in [p.shared, p.other] + (orphan ? [p.lost] : []) {
                try db.execute(sql: "INSERT INTO blobs(sha256, size, storedSize, encoding, inline, createdAt) VALUES (?, ?, ?, 'identity', ?, 1)",
                               arguments: [SHA256Hasher.hash(bytes).hex, bytes.count, bytes.count, Data(bytes)])
            }
            func receipt(_ id: String, _ zone: String, _ merchant: String?, _ date: String, note: String? = nil) throws {
                try db.execute(sql: """
                    INSERT INTO receipts(id, zone, merchant, date, total, currency, note, tags, createdAt, modifiedAt)
                    VALUES (?, ?, ?, ?, '12.50', 'EUR', ?, '["fsa"]', 1, 2)
                    """, arguments: [id, zone, merchant, date, note])
            }
            func attach(_ id: String, _ bytes: [UInt8], _ name: String, _ position: Int) throws {
                try db.execute(sql: """
                    INSERT INTO attachments(receiptID, sha256, filename, mediaType, position, size) VALUES (?, ?, ?, 'text/plain', ?, ?)
                    """, arguments: [id, SHA256Hasher.hash(bytes).hex, name, position, bytes.count])
            }
            // A receipt deleted between two others: the rowids to keep have a gap.
            try receipt(p.cafe, "personal", "Café Zeitgeist", "2025-03-04")
            try receipt(p.gone, "personal", "Gone", "2025-01-01")
            try receipt(p.pharmacy, "taxes", "Apotheke", "2025-03-05")
            try receipt(p.bare, "personal", nil, "2025-03-06", note: "paper copy in the drawer")
            try db.execute(sql: "DELETE FROM receipts WHERE id = ?", arguments: [p.gone])
            // Out of position order on purpose, and one blob shared by two receipts under two names.
            try attach(p.cafe, p.other, "page2.txt", 1)
            try attach(p.cafe, p.shared, "page1.txt", 0)
            try attach(p.pharmacy, p.shared, "rx.txt", 0)
            try db.execute(sql: "INSERT INTO blobText(sha256, extractor, state, text, extractedAt) VALUES (?, 'plain-1', 'text', ?, 5)",
                           arguments: [SHA256Hasher.hash(p.shared).hex, String(decoding: p.shared, as: UTF8.self)])
            if orphan { try attach(p.gone, p.lost, "lost.txt", 0) }
        }
        let rowids = try queue.read { db in
            Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT id, rowid FROM receipts").map { ($0[0] as String, $0[1] as Int64) })
        }
        try queue.close()
        return (path, rowids)
    }

    /// An empty catalog at `path` (a vault's folder) as the version that applied migrations up to
    /// `migration` made it, with a new vault's settings; `user_version` set to `version`.
    static func olderCatalog(at path: String, upTo migration: String, version: Int, foreignKeys: Bool = true) throws -> DatabaseQueue {
        try Vault.create(at: path).vault.close()
        let catalogPath = FileSystem.join(path, Catalog.fileName)
        let settings = try DatabaseQueue(path: catalogPath).read { db in try Row.fetchAll(db, sql: "SELECT key, value FROM settings") }
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: catalogPath + suffix) }
        // Private, as `Catalog.create` makes it (SQLite gives the -wal and -shm files its mode).
        let fd = open(catalogPath, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0)
        close(fd)
        var config = Configuration()
        config.foreignKeysEnabled = foreignKeys
        let queue = try DatabaseQueue(path: catalogPath, configuration: config)
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = WAL") }
        try Schema.migrator.migrate(queue, upTo: migration)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA application_id = \(Schema.applicationID)")
            try db.execute(sql: "PRAGMA user_version = \(version)")
        }
        XCTAssertEqual(try queue.read { db in try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations").last }, migration)
        try queue.write { db in
            for row in settings { try db.execute(sql: "INSERT INTO settings(key, value) VALUES (?, ?)", arguments: [row[0], row[1]]) }
        }
        return queue
    }

    func testAVersionSevenCatalogMigratesKeepingEveryReceiptFileIndexRowAndCount() async throws {
        let p = Planted()
        let (path, rowids) = try versionSevenVault()
        XCTAssertEqual(rowids, [p.cafe: 1, p.pharmacy: 3, p.bare: 4])

        let vault = try Vault.open(at: path)
        try vault.catalog.read { db in
            XCTAssertEqual(try Int.fetchOne(db, sql: "PRAGMA user_version"), Catalog.schemaVersion)
            let numbers = try Row.fetchAll(db, sql: "SELECT \(ReceiptID.shown("id")), rowNumber FROM receipts").map { ($0[0] as String, $0[1] as Int64) }
            XCTAssertEqual(Dictionary(uniqueKeysWithValues: numbers), rowids)
            // Attachments in key order: by receipt row, then address; each keeps its receipt's id beside the row.
            let attachments = try Row.fetchAll(db, sql: "SELECT receiptRow, \(ReceiptID.shown("receiptID")), filename, position FROM attachments")
                .map { "\($0[0] as Int64) \($0[1] as String) \($0[2] as String) \($0[3] as Int)" }
            let (shared, other) = (SHA256Hasher.hash(p.shared).hex, SHA256Hasher.hash(p.other).hex)
            XCTAssertEqual(attachments, ["1 \(p.cafe) \(shared < other ? "page1.txt 0" : "page2.txt 1")",
                                         "1 \(p.cafe) \(shared < other ? "page2.txt 1" : "page1.txt 0")", "3 \(p.pharmacy) rx.txt 0"])
            // No trigger of v4/v5 survives: they named receipts by id.
            let triggers = try String.fetchAll(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'trigger'")
            XCTAssertEqual(triggers.count, 31, "v12's 29 and v13's two (`TextOnce`)")
            XCTAssertTrue(triggers.allSatisfy { !$0.contains("receiptID") }, "\(triggers.filter { $0.contains("receiptID") })")
        }
        let listed = try vault.list()
        XCTAssertEqual(listed.map(\.id), [p.cafe, p.pharmacy, p.bare])
        XCTAssertEqual(listed[0].attachments.map(\.filename), ["page1.txt", "page2.txt"])
        XCTAssertEqual(listed[0].attachments.map(\.size), [Int64(p.shared.count), Int64(p.other.count)])
        XCTAssertEqual(listed[1].attachments.map(\.sha256), [SHA256Hasher.hash(p.shared).hex])
        XCTAssertEqual(listed[2].attachments, [])
        XCTAssertEqual(try vault.show(p.pharmacy).zone, "taxes")
        XCTAssertEqual(try vault.search("amoxicillin").map(\.receipt.id).sorted(), [p.cafe, p.pharmacy])
        XCTAssertEqual(try vault.search("cafe").map(\.receipt.id), [p.cafe])
        XCTAssertEqual(try vault.search("drawer").map(\.receipt.id), [p.bare])
        let stats = try vault.stats()
        XCTAssertEqual([stats.receipts, stats.attachments, stats.blobs], [3, 3, 2])
        try vault.close()
        var check = try await Vault.fsck(at: path)
        XCTAssertTrue(check.ok, "\(check.problems)")

        // Every writer goes on through the new triggers.
        let again = try Vault.open(at: path)
        try again.edit(p.cafe, ReceiptMetadata(merchant: "Kaffeehaus Sperl"))
        let added = try folder.write("in/scan.txt", "replacement windscreen wiper")
        XCTAssertEqual(try again.attach(p.bare, paths: [added]).attachments.map(\.filename), ["scan.txt"])
        try again.remove([p.pharmacy])
        XCTAssertEqual(try again.search("sperl").map(\.receipt.id), [p.cafe])
        XCTAssertEqual(try again.search("zeitgeist").map(\.receipt.id), [])
        XCTAssertEqual(try again.search("scan").map(\.receipt.id), [p.bare])
        XCTAssertEqual(try again.search("amoxicillin").map(\.receipt.id), [p.cafe])
        let imported = try again.importFiles([try folder.write("in/new.txt", "a receipt imported after the migration")])
        let newID = try XCTUnwrap(imported.imported.first?.id)
        XCTAssertEqual(try again.catalog.read { db in try Int64.fetchOne(db, sql: "SELECT rowNumber FROM receipts WHERE id = ?", arguments: [newID]) }, 5)
        let after = try again.stats()
        XCTAssertEqual([after.receipts, after.attachments, after.blobs], [3, 4, 4])
        try again.close()
        check = try await Vault.fsck(at: path)
        XCTAssertTrue(check.ok, "\(check.problems)")
    }

    /// An attachment whose receipt is gone has no row to be keyed by: the migration refuses, saying
    /// why, and the catalog is left as it was (still version 7, the attachment still there). The
    /// repair fsck then offers rebuilds the catalog from what it can read, and the file the lost
    /// receipt held (inline: its bytes are only in the catalog) becomes a recovered receipt, never
    /// garbage for gc.
    func testAnAttachmentWithoutItsReceiptStopsTheMigrationAndChangesNothing() async throws {
        let (path, _) = try versionSevenVault(orphan: true)
        XCTAssertThrowsError(try Vault.open(at: path)) { error in
            XCTAssertTrue("\(error)".contains("1 attachment(s) name a receipt the catalog does not have"), "\(error)")
        }
        let queue = try DatabaseQueue(path: FileSystem.join(path, Catalog.fileName))
        try await queue.read { db in
            XCTAssertEqual(try Int.fetchOne(db, sql: "PRAGMA user_version"), 8)
            XCTAssertEqual(try String.fetchAll(db, sql: "SELECT filename FROM attachments ORDER BY filename"), ["lost.txt", "page1.txt", "page2.txt", "rx.txt"])
            XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE type = 'trigger'"), 32)
        }
        try queue.close()

        let p = Planted()
        let repaired = try await Vault.fsck(at: path, options: FsckOptions(repair: true))
        XCTAssertTrue(repaired.ok, "\(repaired.problems)")
        let vault = try Vault.open(at: path)
        XCTAssertEqual(Set(try vault.list().map(\.id)).intersection([p.cafe, p.pharmacy, p.bare]), [p.cafe, p.pharmacy, p.bare])
        let recovered = try vault.list(ReceiptScope(zone: Zone.recovered))
        XCTAssertEqual(recovered.flatMap(\.attachments).map(\.sha256), [SHA256Hasher.hash(p.lost).hex])
        XCTAssertEqual(try vault.collectGarbage(graceSeconds: 0).removedBlobs, 0)
        var bytes: [UInt8] = []
        _ = try vault.readBlob(vault.blobRecord(SHA256Hasher.hash(p.lost).hex)) { bytes += $0 }
        XCTAssertEqual(bytes, p.lost)
        try vault.close()
    }

    /// The id an attachment keeps beside its receipt's row is checked by the full fsck, and the repair
    /// gives it the id of the receipt whose row it is keyed by.
    func testFsckFindsAnAttachmentNamingAnotherReceiptsIDAndRepairGivesItItsOwn() async throws {
        let path = folder.file("vault")
        let vault = try Vault.create(at: path).vault
        let report = try vault.importFiles([try folder.write("in/a.txt", "first receipt"), try folder.write("in/b.txt", "second receipt")])
        let (a, b) = (report.imported[0].id.text, report.imported[1].id.text)
        try vault.catalog.write { db in
            try db.execute(sql: "UPDATE attachments SET receiptID = ? WHERE filename = 'a.txt'", arguments: [report.imported[1].id])
        }
        try vault.close()
        let quick = try await Vault.fsck(at: path, options: FsckOptions(quick: true))
        XCTAssertTrue(quick.ok, "\(quick.problems)")
        let check = try await Vault.fsck(at: path)
        XCTAssertEqual(check.problems.map(\.detail),
                       ["1 attachment names a receipt id other than its receipt row's: run `receipt fsck --repair` to correct them"])
        let repaired = try await Vault.fsck(at: path, options: FsckOptions(repair: true))
        XCTAssertTrue(repaired.ok, "\(repaired.problems)")
        XCTAssertTrue(repaired.problems.contains { $0.repaired && $0.detail.hasSuffix(": 1 given their receipt's id") }, "\(repaired.problems)")
        let clean = try await Vault.fsck(at: path)
        XCTAssertEqual(clean.problems, [])
        let reopened = try Vault.open(at: path)
        XCTAssertEqual(try reopened.show(a).attachments.map(\.filename), ["a.txt"])
        XCTAssertEqual(try reopened.show(b).attachments.map(\.filename), ["b.txt"])
        try reopened.close()
    }
}
