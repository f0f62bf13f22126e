import BlobStore
import Foundation
import GRDB
@testable import ReceiptCatalog
import TestSupport
import XCTest

/// I7: a catalog written by a newer version, or one SQLite cannot read, is refused and no file is touched.
final class CatalogTests: XCTestCase {
    var folder: TemporaryFolder!

    override func setUp() { folder = TemporaryFolder("receipt-catalog") }
    override func tearDown() { folder = nil }

    /// A closed catalog with one zone, at `vault/catalog.sqlite`.
    func makeCatalog() throws -> String {
        try FileManager.default.createDirectory(atPath: folder.file("vault"), withIntermediateDirectories: true)
        let path = folder.file("vault/" + Catalog.fileName)
        let catalog = try Catalog.create(at: path, settings: VaultSettings(vaultID: "test"))
        try catalog.close()
        return path
    }

    /// Names and bytes of every file in the catalog's folder.
    func folderState(_ path: String) throws -> [String: Data] {
        let dir = FileSystem.parentPath(path)
        var out: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: dir) {
            out[name] = try Data(contentsOf: URL(fileURLWithPath: dir + "/" + name))
        }
        return out
    }

    /// GRDB's pool sets `synchronous = NORMAL` on its writer when it turns WAL on: a commit must
    /// still be durable by itself (FULL), on a new catalog and on one opened again.
    func testTheWriterCommitsWithSynchronousFull() throws {
        let path = try makeCatalog()
        for catalog in [try Catalog.open(at: path)] {
            let level = try catalog.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
            XCTAssertEqual(level, 2, "2 is FULL")
            try catalog.close()
        }
        try FileManager.default.removeItem(atPath: FileSystem.parentPath(path))
        try FileManager.default.createDirectory(atPath: FileSystem.parentPath(path), withIntermediateDirectories: true)
        let created = try Catalog.create(at: path, settings: VaultSettings(vaultID: "test"))
        XCTAssertEqual(try created.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }, 2)
        try created.close()
    }

    /// New catalogs get 16 KiB pages; a catalog made with other pages keeps them (SQLite fixes the
    /// page size when the file is created) and is migrated and written as before.
    func testNewCatalogsHave16KiBPagesAndOlderOnesKeepTheirs() throws {
        let path = try makeCatalog()
        let created = try Catalog.open(at: path)
        XCTAssertEqual(try created.read { db in try Int.fetchOne(db, sql: "PRAGMA page_size") }, 16384)
        try created.close()

        let oldPath = folder.file("old/" + Catalog.fileName)
        try FileManager.default.createDirectory(atPath: folder.file("old"), withIntermediateDirectories: true)
        let queue = try DatabaseQueue(path: oldPath)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA page_size = 4096")
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA application_id = \(Schema.applicationID)")
            try db.execute(sql: "CREATE TABLE unrelated (x)")
        }
        try queue.close()
        let old = try Catalog.open(at: oldPath)
        XCTAssertEqual(try old.read { db in try Int.fetchOne(db, sql: "PRAGMA page_size") }, 4096)
        XCTAssertEqual(try old.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") }, Catalog.schemaVersion)
        try old.write { db in try db.execute(sql: "INSERT INTO zones(name, createdAt) VALUES ('z', 0)") }
        XCTAssertEqual(try old.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM zones") }, 1)
        try old.close()
    }

    func testNewerSchemaIsRefusedWithoutTouchingTheFile() throws {
        let path = try makeCatalog()
        // user_version is the big-endian 32-bit integer at offset 60 of the SQLite header.
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let newer = UInt32(Catalog.schemaVersion + 1)
        for i in 0..<4 { bytes[60 + i] = UInt8(truncatingIfNeeded: newer >> (24 - 8 * UInt32(i))) }
        try bytes.write(to: URL(fileURLWithPath: path))
        let before = try folderState(path)
        XCTAssertEqual(before.keys.sorted(), [Catalog.fileName])

        XCTAssertThrowsError(try Catalog.open(at: path)) { error in
            let e = error as? CatalogError
            XCTAssertEqual(e?.code, .newerSchema(found: Catalog.schemaVersion + 1, known: Catalog.schemaVersion))
            XCTAssertTrue(e?.description.contains("upgrade receipt") ?? false, "\(error)")
        }
        XCTAssertEqual(try folderState(path), before, "no byte and no -wal/-shm file may change")
        // SQLite itself agrees the file is intact and says the version we wrote.
        let queue = try DatabaseQueue(path: path, configuration: { var c = Configuration(); c.readonly = true; return c }())
        XCTAssertEqual(try queue.read { try Int.fetchOne($0, sql: "PRAGMA user_version") }, Catalog.schemaVersion + 1)
    }

    func testUnreadableCatalogIsRefusedNamingFsckRepairWithoutTouchingIt() throws {
        let path = try makeCatalog()
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        // Keep the header (so the file still looks like a receipt catalog) and scramble the pages.
        for i in 100..<bytes.count { bytes[i] = UInt8(truncatingIfNeeded: i &* 31 &+ 7) }
        try bytes.write(to: URL(fileURLWithPath: path))
        let before = try folderState(path)
        XCTAssertThrowsError(try Catalog.open(at: path)) { error in
            XCTAssertEqual((error as? CatalogError)?.code, .unreadable, "\(error)")
            XCTAssertTrue("\(error)".contains("receipt fsck --repair"), "\(error)")
        }
        XCTAssertEqual(try folderState(path), before, "no byte and no -wal/-shm file may change")

        // Not SQLite at all.
        try Data("this is not a database at all, just text".utf8).write(to: URL(fileURLWithPath: path))
        let text = try folderState(path)
        XCTAssertThrowsError(try Catalog.open(at: path)) { error in
            XCTAssertEqual((error as? CatalogError)?.code, .unreadable)
            XCTAssertTrue("\(error)".contains("receipt fsck --repair"), "\(error)")
        }
        XCTAssertEqual(try folderState(path), text)
    }
    /// A receipt is read by column (`Receipt.init(row:)`): every field comes back as it was written,
    /// and a row whose tags are not a JSON array throws (fsck's to report) instead of trapping.
    func testAReceiptRowIsReadBackFieldByFieldAndADamagedOneThrows() throws {
        let catalog = try Catalog.open(at: try makeCatalog())
        let written = Receipt(id: ReceiptID.generate(), zone: "z", merchant: "Café Ünter", date: "2025-03-04",
                              total: "12.30", currency: "EUR", category: "dining", note: "two\nlines",
                              tags: ["fsa", "2025"], createdAt: 1, modifiedAt: 2, status: "submitted",
                              claim: "HSA-42", reimbursedOn: "2025-04-01")
        let bare = Receipt(id: ReceiptID.generate(), zone: "z", createdAt: 3, modifiedAt: 3)
        try catalog.write { db in
            try db.execute(sql: "INSERT INTO zones(name, createdAt) VALUES ('z', 0)")
            try CatalogWriter(db).addReceipt(written)
            try CatalogWriter(db).addReceipt(bare)
        }
        XCTAssertEqual(try catalog.read { db in try Catalog.receipt(db, written.id) }, written)
        XCTAssertEqual(try catalog.read { db in try Catalog.receipt(db, bare.id) }, bare)
        try catalog.write { db in
            try db.execute(sql: "UPDATE receipts SET tags = 'fsa, 2025' WHERE id = ?", arguments: [written.id])
        }
        XCTAssertThrowsError(try catalog.read { db in try Catalog.receipt(db, written.id) })
        try catalog.close()
    }
}
