import Foundation
import GRDB
@testable import ReceiptCatalog
@testable import ReceiptServer
import TestSupport
import XCTest

/// A migration first keeps the catalog file it is about to change (`catalog.sqlite.before-vN`,
/// `server.sqlite.before-vN`): the copy is the old catalog, row for row, and opens as the old
/// version; the next successful `fsck` (vault) or `server gc` (server) removes it.
final class UpgradeCopyTests: XCTestCase {
    func testAVaultMigrationKeepsTheOldCatalogUntilFsckPasses() async throws {
        let folder = TemporaryFolder("receipt-upgrade-copy")
        let vault = folder.file("vault")
        let initialized = try await CLI.run(["init", "--vault", vault], in: folder)
        XCTAssertEqual(initialized.status, 0, initialized.stderr)
        let catalogPath = vault + "/" + Catalog.fileName
        let settings = try await DatabaseQueue(path: catalogPath).read { db in
            try Row.fetchAll(db, sql: "SELECT key, value FROM settings").map { [$0[0] as String, $0[1] as String] }
        }
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: catalogPath + suffix) }

        // The catalog as the release before v9-readings wrote it: user_version 9, one receipt.
        let fd = open(catalogPath, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        close(fd)
        let old = try DatabaseQueue(path: catalogPath)
        try await old.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = WAL") }
        try Schema.migrator.migrate(old, upTo: "v8-receipt-rows")
        try await old.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA application_id = \(Schema.applicationID)")
            try db.execute(sql: "PRAGMA user_version = \(Schema.version - 1)")
        }
        try await old.write { db in
            for row in settings { try db.execute(sql: "INSERT INTO settings(key, value) VALUES (?, ?)", arguments: [row[0], row[1]]) }
            try db.execute(sql: "INSERT INTO zones(name, createdAt) VALUES ('personal', 1)")
            try db.execute(sql: """
                INSERT INTO receipts(id, zone, merchant, date, total, currency, tags, createdAt, modifiedAt)
                VALUES ('11111111-1111-4111-8111-111111111111', 'personal', 'Bakery', '2025-03-04', '3.20', 'EUR', '[]', 1, 2)
                """)
        }
        try old.close()
        let before = try Self.contents(of: catalogPath)

        let copy = CatalogCopy.beforeMigrationPath(catalogPath, version: Schema.version)
        let listed = try await CLI.run(["list", "--json", "--vault", vault], in: folder)
        XCTAssertEqual(listed.status, 0, listed.stderr)
        XCTAssertTrue(listed.stdout.contains("Bakery"), listed.stdout)
        // The upgrade is said before it runs (it can take minutes) and after: once.
        XCTAssertTrue(listed.stderr.contains("upgrading the catalog from schema version \(Schema.version - 1) to \(Schema.version)"), listed.stderr)
        XCTAssertTrue(listed.stderr.contains("upgraded the catalog in") && listed.stderr.contains("kept as \(copy)"), listed.stderr)
        let again = try await CLI.run(["list", "--json", "--vault", vault], in: folder)
        XCTAssertFalse(again.stderr.contains("upgrad"), again.stderr)
        XCTAssertEqual(try Self.contents(of: copy), before, "the copy is the catalog as it was before the migration")
        XCTAssertEqual(try Self.mode(copy), 0o600)
        let migrated = try await DatabaseQueue(path: catalogPath).read { try Int.fetchOne($0, sql: "PRAGMA user_version") }
        XCTAssertEqual(migrated, Schema.version)

        let checked = try await CLI.run(["fsck", "--vault", vault], in: folder)
        XCTAssertEqual(checked.status, 0, checked.stdout + checked.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: copy), "a successful fsck removes the copy")
    }

    func testAServerMigrationKeepsTheOldCatalogUntilGC() async throws {
        let folder = TemporaryFolder("receipt-upgrade-copy-server")
        let data = folder.file("server")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let path = data + "/" + ServerCatalog.fileName
        let migrations = ServerCatalog.migrator.migrations
        let old = try DatabaseQueue(path: path)
        try ServerCatalog.migrator.migrate(old, upTo: "server-v1")
        try await old.write { db in
            try db.execute(sql: "INSERT INTO accounts(id, name, tokenHash, createdAt) VALUES (1, 'alice', ?, 5)",
                           arguments: [ServerRules.tokenHash(String(repeating: "7", count: 64))])
        }
        // The release before the latest migration.
        try ServerCatalog.migrator.migrate(old, upTo: migrations[migrations.count - 2])
        try old.close()
        let before = try Self.contents(of: path)

        let listed = try await CLI.run(["server", "account-list", "--data", data], in: folder)
        XCTAssertEqual(listed.status, 0, listed.stderr)
        let copy = CatalogCopy.beforeMigrationPath(path, version: migrations.count)
        XCTAssertEqual(try Self.contents(of: copy), before, "the copy is the catalog as it was before the migration")
        XCTAssertEqual(try Self.mode(copy), 0o600)

        let collected = try await CLI.run(["server", "gc", "--data", data], in: folder)
        XCTAssertEqual(collected.status, 0, collected.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: copy), "a successful gc removes the copy")
    }

    /// The database as SQLite reads it: its header versions, schema and every row of every table
    /// (the full-text tables through their shadow tables), so two files compare as databases.
    static func contents(of path: String) throws -> [String] {
        var config = Configuration()
        config.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: config)
        defer { try? queue.close() }
        return try queue.read { db in
            var lines = ["user_version \(try Int.fetchOne(db, sql: "PRAGMA user_version") ?? -1)",
                         "application_id \(try Int.fetchOne(db, sql: "PRAGMA application_id") ?? -1)"]
            let tables = try Row.fetchAll(db, sql: "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name")
            lines += try String.fetchAll(db, sql: "SELECT type || ' ' || name || ' ' || coalesce(sql, '') FROM sqlite_master ORDER BY type, name")
            for table in tables where !((table["sql"] as String?) ?? "").hasPrefix("CREATE VIRTUAL") {
                let name: String = table["name"]
                lines += try Row.fetchAll(db, sql: "SELECT * FROM \"\(name)\" ORDER BY 1").map { "\(name): \($0)" }
            }
            return lines
        }
    }

    static func mode(_ path: String) throws -> Int {
        ((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? 0) & 0o777
    }
}
