import BlobStore
import Foundation
import GRDB
@testable import ReceiptServer
import ReceiptWire
import TestSupport
import WebForms
import XCTest

/// The server catalog's migration "server-keys-as-bytes" (ServerCatalog+ByteKeys.swift): record ids
/// become their 16 bytes and blob addresses their 32 in every table holding one, every row and the
/// search index kept (an id pushed in upper case before pushes were canonicalised becomes its
/// lowercase bytes); a catalog holding what cannot be converted is refused with one line naming the
/// table and the value, and left byte for byte as it was.
final class ServerByteKeysMigrationTests: XCTestCase {
    static let token = ServerMigrationTests.token
    static let blob = String(repeating: "b", count: 64)
    /// Uploaded by alice, referenced by no record, its text kept aside.
    static let loose = String(repeating: "c", count: 64)
    static let (r1, r2) = (ServerMigrationTests.r1, ServerMigrationTests.r2)
    static let payload = ServerMigrationTests.payload
    static let previous = "server-web-search-texts-by-record"

    /// A catalog as the release before the migration left it, in WAL mode as a server's is, with a
    /// row in every table that holds a key; `extra` is more SQL run after.
    func oldCatalog(_ data: String, extra: String = "") async throws -> String {
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let path = data + "/" + ServerCatalog.fileName
        let old = try DatabaseQueue(path: path)
        try await old.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = WAL") }
        try ServerCatalog.migrator.migrate(old, upTo: Self.previous)
        try await old.write { db in
            try db.execute(sql: """
                INSERT INTO accounts(id, name, createdAt) VALUES (1, 'alice', 5), (2, 'bob', 5);
                INSERT INTO tokens(accountID, label, tokenHash, createdAt) VALUES (1, 'default', ?, 5);
                INSERT INTO blobs(sha256, size, createdAt, touchedAt) VALUES (?, 10, 6, 6), (?, 10, 6, 6);
                INSERT INTO zones(id, uid, ownerID, name, seq, createdAt) VALUES (1, 'u1', 1, 'home', 2, 5);
                INSERT INTO shares(zoneID, accountID, role) VALUES (1, 2, 'read');
                INSERT INTO records(zoneID, id, changeTag, seq, payload) VALUES (1, ?, 't1', 1, ?), (1, ?, 't2', 2, NULL);
                INSERT INTO recordBlobs(zoneID, recordID, sha256) VALUES (1, ?, ?);
                INSERT INTO possessions(accountID, sha256) VALUES (1, ?), (1, ?);
                INSERT INTO blobTexts(ownerID, sha256, version, bytes, text, failure, uploadedAt)
                    VALUES (1, ?, '1', 20, 'Sourdough Roggenbrot', NULL, 7);
                INSERT INTO blobTextsUnowned(sha256, version, text, failure, uploadedAt) VALUES (?, 'old', NULL, 'unreadable', 7);
                """, arguments: [ServerRules.tokenHash(Self.token), Self.blob, Self.loose, Self.r1.uppercased(), Self.payload, Self.r2,
                                 Self.r1.uppercased(), Self.blob, Self.blob, Self.loose, Self.blob, Self.loose])
            if !extra.isEmpty { try db.execute(sql: extra) }
        }
        try old.close()
        return path
    }

    /// Every table holding a key, rows in key order, keys shown as lowercase hex digits alone (as
    /// text before the migration, as bytes after), and the search index's documents.
    static func dump(_ db: Database, bytes: Bool) throws -> [String] {
        func key(_ column: String) -> String { bytes ? "lower(hex(\(column)))" : "lower(replace(\(column), '-', ''))" }
        let queries = [
            "SELECT zoneID, \(key("id")), changeTag, seq, payload FROM records",
            "SELECT zoneID, \(key("recordID")), \(key("sha256")) FROM recordBlobs",
            "SELECT \(key("sha256")), size, createdAt, touchedAt FROM blobs",
            "SELECT accountID, \(key("sha256")) FROM possessions",
            "SELECT ownerID, \(key("sha256")), version, bytes, text, failure, uploadedAt FROM blobTexts",
            "SELECT \(key("sha256")), version, text, failure, uploadedAt FROM blobTextsUnowned",
            "SELECT docID, zoneID, \(key("id")), date, createdAt, merchant, category, status, currency, total, words FROM webRows",
            "SELECT rowid, meta, text FROM webSearch",
        ]
        return try queries.flatMap { sql in try Row.fetchAll(db, sql: sql + " ORDER BY 1, 2").map { $0.databaseValues.map(\.description).joined(separator: "|") } }
    }

    func testAnOldCatalogsKeysBecomeBytesAndEveryRowIsKept() async throws {
        let folder = TemporaryFolder("receipt-server-byte-keys")
        let data = folder.file("server")
        let path = try await oldCatalog(data)
        let (before, usedBefore) = try await DatabaseQueue(path: path).read { db in
            (try Self.dump(db, bytes: false), try ServerCatalog.usage(db, accountID: 1))
        }

        let catalog = try ServerCatalog(dataPath: data)
        let (after, usedAfter, wrongKeys, problems) = try await catalog.pool.read { db in
            let wrongKeys = try [("records", "id", 16), ("recordBlobs", "recordID", 16), ("webRows", "id", 16), ("blobs", "sha256", 32),
                                 ("recordBlobs", "sha256", 32), ("possessions", "sha256", 32), ("blobTexts", "sha256", 32),
                                 ("blobTextsUnowned", "sha256", 32)].map { table, column, size in
                try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table) WHERE typeof(\(column)) <> 'blob' OR length(\(column)) <> \(size)") ?? -1
            }
            let problems = try String.fetchAll(db, sql: "PRAGMA integrity_check") + Row.fetchAll(db, sql: "PRAGMA foreign_key_check").map { "\($0)" }
            return (try Self.dump(db, bytes: true), try ServerCatalog.usage(db, accountID: 1), wrongKeys, problems)
        }
        XCTAssertEqual(after, before, "every row and search document kept, each key the bytes of its digits")
        XCTAssertEqual(before.count, 11)
        XCTAssertEqual(wrongKeys, Array(repeating: 0, count: 8), "every key column holds bytes of its size")
        XCTAssertEqual(problems, ["ok"])
        XCTAssertEqual(usedAfter.total, usedBefore.total)

        try await Self.assertKeysAreTextAtTheEdges(catalog)
        try catalog.close()
    }

    /// Hex at the edges of a migrated store: the pull, the web list and its search, the texts, gc's
    /// candidates; the record pushed in upper case is found by its id in either case (an edit based
    /// on its tag is saved, not a conflict).
    static func assertKeysAreTextAtTheEdges(_ store: any ServerStore) async throws {
        let web = try XCTUnwrap(store as? any WebStore)
        let found = try await store.authenticate(token: Self.token)
        let alice = try XCTUnwrap(found)
        let pulled = try await store.changes(owner: "alice", name: "home", since: nil, limit: 10, caller: alice)
        XCTAssertEqual(pulled.records.map(\.id), [Self.r1, Self.r2], "the id pushed in upper case is pulled lowercase")
        let page = try await web.webZonePage(owner: "alice", name: "home", filter: WebFilter(words: ["roggenbrot"]), offset: 0,
                                             limit: 50, caller: alice)
        XCTAssertEqual(page.receipts.map(\.id), [Self.r1])
        let texts = try await store.texts([Self.blob], version: "1", caller: alice, byteLimit: 1 << 20).texts
        XCTAssertEqual(texts.map(\.text), ["Sourdough Roggenbrot"])
        let collectable = try await store.transaction(.read) { try await $0.collectableBlobs(touchedBy: 100).map(\.sha256) }
        XCTAssertEqual(collectable, [Self.loose])
        let receipt = try XCTUnwrap(ServerRules.receipt(Self.payload))
        let push = try await store.push(WirePushRequest(records: [WirePushRecord(id: Self.r1.uppercased(), baseTag: "t1", receipt: receipt)]),
                                        owner: "alice", name: "home", caller: alice)
        XCTAssertEqual(push.results.map(\.status), [.saved])
        let again = try await store.changes(owner: "alice", name: "home", since: pulled.changeToken, limit: 10, caller: alice)
        XCTAssertEqual(again.records.map(\.id), [Self.r1])
    }

    /// A record id that is no UUID, two ids of one zone that differ only in case, an address that is
    /// not 64 lowercase hex digits: each refused with one line naming the table and the value, the
    /// catalog's file unchanged and no pre-upgrade copy made.
    func testACatalogHoldingWhatCannotBeConvertedIsRefusedUntouched() async throws {
        let cases: [(extra: String, says: [String])] = [
            ("INSERT INTO records(zoneID, id, changeTag, seq, payload) VALUES (1, 'r1', 't9', 3, NULL)",
             ["table records", "'r1'", "no UUID"]),
            ("INSERT INTO records(zoneID, id, changeTag, seq, payload) VALUES (1, '\(Self.r1)', 't9', 3, NULL)",
             ["table records", Self.r1.uppercased(), Self.r1, "two cases"]),
            ("INSERT INTO blobs(sha256, size, createdAt, touchedAt) VALUES ('\(String(repeating: "Z", count: 64))', 1, 6, 6)",
             ["table blobs", String(repeating: "Z", count: 64), "64 lowercase hex digits"]),
        ]
        for (n, bad) in cases.enumerated() {
            let folder = TemporaryFolder("receipt-server-byte-keys-refused")
            let data = folder.file("server")
            let path = try await oldCatalog(data, extra: bad.extra)
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            XCTAssertThrowsError(try ServerCatalog(dataPath: data), "case \(n)") { error in
                let message = (error as? ServerError)?.message ?? "\(error)"
                for part in bad.says { XCTAssertTrue(message.contains(part), "case \(n): \(message)") }
                XCTAssertFalse(message.contains("\n"), message)
            }
            let result = try await CLI.run(["server", "account-list", "--data", data], in: folder)
            XCTAssertNotEqual(result.status, 0)
            XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.stderr)
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), bytes, "case \(n): the catalog is as it was")
            let left = try FileManager.default.contentsOfDirectory(atPath: data).filter { $0.contains("before") }
            XCTAssertEqual(left, [], "case \(n): no pre-upgrade copy of a refused catalog")
            let applied = try await DatabaseQueue(path: path).read { try ServerCatalog.migrator.appliedIdentifiers($0) }
            XCTAssertFalse(applied.contains(ServerCatalog.byteKeysMigration))
        }
    }

    /// PostgreSQL's version 9: ids become `uuid`, addresses `bytea`, every row and search document
    /// kept; a database holding what cannot be converted is refused with one line, left at version 8.
    func testAPostgreSQLDatabasesKeysBecomeBytesAndWhatCannotBeConvertedIsRefused() async throws {
        let cluster = try PostgresCluster.shared()
        let folder = TemporaryFolder("receipt-server-byte-keys-pg")
        let upper = Self.r1.uppercased()
        func oldDatabase(_ extra: String = "") throws -> String {
            let url = try cluster.createDatabase()
            try ServerMigrationTests.oldPostgres(cluster, url, version: PostgresByteKeys.version - 1, """
                INSERT INTO accounts(id, name, created_at) VALUES (2, 'bob', 5);
                INSERT INTO blobs(sha256, size, created_at, touched_at) VALUES ('\(Self.loose)', 10, 6, 6);
                INSERT INTO shares(zone_id, account_id, role) VALUES (1, 2, 'read');
                INSERT INTO records(zone_id, id, change_tag, seq, payload) VALUES (1, '\(upper)', 't1', 1, '\(Self.payload)'), (1, '\(Self.r2)', 't2', 2, NULL);
                INSERT INTO record_blobs(zone_id, record_id, sha256) VALUES (1, '\(upper)', '\(Self.blob)');
                INSERT INTO possessions(account_id, sha256) VALUES (1, '\(Self.blob)'), (1, '\(Self.loose)');
                INSERT INTO blob_texts(owner_id, sha256, version, bytes, text, failure, uploaded_at) VALUES (1, '\(Self.blob)', '1', 20, 'Sourdough Roggenbrot', NULL, 7);
                INSERT INTO blob_texts_unowned(sha256, version, text, failure, uploaded_at) VALUES ('\(Self.loose)', 'old', NULL, 'unreadable', 7);
                \(extra)
                """)
            return url
        }
        func dump(_ url: String, bytes: Bool) throws -> String {
            func id(_ c: String) -> String { bytes ? "replace(\(c)::text, '-', '')" : "lower(replace(\(c), '-', ''))" }
            func address(_ c: String) -> String { bytes ? "encode(\(c), 'hex')" : c }
            return try [
                "SELECT zone_id, \(id("id")), change_tag, seq, payload FROM records",
                "SELECT zone_id, \(id("record_id")), \(address("sha256")) FROM record_blobs",
                "SELECT \(address("sha256")), size, created_at, touched_at FROM blobs",
                "SELECT account_id, \(address("sha256")) FROM possessions",
                "SELECT owner_id, \(address("sha256")), version, bytes, text, failure, uploaded_at FROM blob_texts",
                "SELECT \(address("sha256")), version, text, failure, uploaded_at FROM blob_texts_unowned",
                "SELECT zone_id, \(id("id")), date, created_at, merchant, total, amount, words, search::text FROM web_rows",
            ].map { try cluster.psql(url, $0 + " ORDER BY 1, 2") }.joined()
        }
        let url = try oldDatabase()
        let before = try dump(url, bytes: false)
        let store = try await ServerDatabase(url).open(dataPath: folder.file("server"))
        let after = try dump(url, bytes: true)
        XCTAssertEqual(after, before, "every row and search document kept, each key the bytes of its digits")
        XCTAssertEqual(before.split(separator: "\n").count, 10)
        let types = try cluster.psql(url, """
            SELECT string_agg(table_name || '.' || column_name || ' ' || data_type, ', ' ORDER BY table_name, column_name)
            FROM information_schema.columns WHERE table_schema = 'public' AND (column_name IN ('record_id', 'sha256')
                OR (column_name = 'id' AND table_name IN ('records', 'web_rows')))
            """).trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(types, "blob_texts.sha256 bytea, blob_texts_unowned.sha256 bytea, blobs.sha256 bytea, possessions.sha256 bytea, "
                       + "record_blobs.record_id uuid, record_blobs.sha256 bytea, records.id uuid, web_rows.id uuid")
        do {
            try await Self.assertKeysAreTextAtTheEdges(store)
        } catch {
            XCTFail("\(error)")
        }
        try await store.close()

        let cases: [(extra: String, says: [String])] = [
            ("INSERT INTO records(zone_id, id, change_tag, seq, payload) VALUES (1, 'r1', 't9', 3, NULL);", ["table records", "'r1'", "no UUID"]),
            ("INSERT INTO records(zone_id, id, change_tag, seq, payload) VALUES (1, '\(Self.r1)', 't9', 3, NULL);",
             ["table records", upper, Self.r1, "two cases"]),
            ("INSERT INTO blobs(sha256, size, created_at, touched_at) VALUES ('\(String(repeating: "Z", count: 64))', 1, 6, 6);",
             ["table blobs", String(repeating: "Z", count: 64), "64 lowercase hex digits"]),
        ]
        for (n, bad) in cases.enumerated() {
            let url = try oldDatabase(bad.extra)
            let before = try dump(url, bytes: false)
            do {
                let opened = try await ServerDatabase(url).open(dataPath: folder.file("server-\(n)"))
                try? await opened.close()
                XCTFail("case \(n): a database holding what cannot be converted was opened")
            } catch {
                let message = (error as? ServerError)?.message ?? "\(error)"
                for part in bad.says { XCTAssertTrue(message.contains(part), "case \(n): \(message)") }
                XCTAssertFalse(message.contains("\n"), message)
            }
            XCTAssertEqual(try cluster.psql(url, "SELECT max(version) FROM receipt_schema").trimmingCharacters(in: .whitespacesAndNewlines),
                           "\(PostgresByteKeys.version - 1)")
            XCTAssertEqual(try dump(url, bytes: false), before, "case \(n): nothing was changed")
        }
    }
}
