import Foundation
import GRDB
@testable import ReceiptServer
import TestSupport
import WebForms
import XCTest

/// The server's catalog across versions of receipt: an older schema is migrated in place (its
/// accounts, tokens, blobs and records kept, the web list's rows made), one written by a newer receipt is refused with a sentence saying
/// to upgrade, and left as it was. Both on the embedded SQLite catalog and on PostgreSQL.
final class ServerMigrationTests: XCTestCase {
    static let token = String(repeating: "7", count: 64)
    static let blob = String(repeating: "b", count: 64)
    /// Record ids as clients push them (UUIDs; stored as their bytes since server-keys-as-bytes).
    static let r1 = "1a1a1a1a-1a1a-4a1a-8a1a-1a1a1a1a1a1a"
    static let r2 = "2b2b2b2b-2b2b-4b2b-8b2b-2b2b2b2b2b2b"
    static let payload = #"{"merchant":"Bakery","date":"2020-01-02","total":"1.50","tags":[],"attachments":[{"sha256":"\#(blob)","size":10,"filename":"rye.jpg","mediaType":"image/jpeg"}],"createdAt":1,"modifiedAt":1}"#

    func testAnOldSQLiteCatalogIsMigratedInPlaceAndANewerOneRefused() async throws {
        let folder = TemporaryFolder("receipt-server-migration")
        let data = folder.file("server")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let path = data + "/" + ServerCatalog.fileName
        // The first released schema: the token's hash still in `accounts`, blobs without `touchedAt`.
        do {
            let old = try DatabaseQueue(path: path)
            try ServerCatalog.migrator.migrate(old, upTo: "server-v1")
            try await old.write { db in
                try db.execute(sql: "INSERT INTO accounts(id, name, tokenHash, createdAt) VALUES (1, 'alice', ?, 5)",
                               arguments: [ServerRules.tokenHash(Self.token)])
                try db.execute(sql: "INSERT INTO blobs(sha256, size, createdAt) VALUES (?, 10, 6)", arguments: [Self.blob])
                try db.execute(sql: "INSERT INTO zones(id, uid, ownerID, name, seq, createdAt) VALUES (1, 'u1', 1, 'home', 2, 5)")
                try db.execute(sql: "INSERT INTO records(zoneID, id, changeTag, seq, payload) VALUES (1, '\(Self.r1)', 't1', 1, ?), (1, '\(Self.r2)', 't2', 2, NULL)",
                               arguments: [Self.payload])
                try db.execute(sql: "INSERT INTO recordBlobs(zoneID, recordID, sha256) VALUES (1, '\(Self.r1)', ?)", arguments: [Self.blob])
            }
            // The release before word search, with a text a member synced.
            try ServerCatalog.migrator.migrate(old, upTo: "server-v4-text")
            try await old.write { db in
                try db.execute(sql: "INSERT INTO blobTexts(sha256, version, text, uploadedAt) VALUES (?, 'v1', 'Sourdough Roggenbrot', 7)",
                               arguments: [Self.blob])
            }
            try old.close()
        }
        let catalog = try ServerCatalog(dataPath: data)
        let alice = try await catalog.authenticate(token: Self.token)
        XCTAssertEqual(alice?.name, "alice", "the account's token works after the migration")
        let migrated = try await catalog.pool.read { db in
            (try ServerCatalog.migrator.appliedIdentifiers(db),
             try Int64.fetchOne(db, sql: "SELECT touchedAt FROM blobs WHERE sha256 = ?", arguments: [StoredKey.blob(Self.blob)]),
             try db.tableExists("blobTexts"),
             try Row.fetchAll(db, sql: "SELECT id, merchant, date FROM webRows").map {
                 StoredKey.recordID($0["id"]) + ":" + ($0["merchant"] as String) + ":" + ($0["date"] as String)
             })
        }
        XCTAssertEqual(migrated.0, Set(ServerCatalog.migrator.migrations))
        XCTAssertEqual(migrated.1, 6, "a blob's touchedAt starts at its creation")
        XCTAssertTrue(migrated.2)
        XCTAssertEqual(migrated.3, [Self.r1 + ":bakery:2020-01-02"], "the web list's rows are made for the live records")
        try await Self.assertSearchable(catalog, alice)
        try catalog.close()

        // A newer receipt's migration: refused, nothing changed, and the CLI says to upgrade.
        let newer = try DatabaseQueue(path: path)
        try await newer.write { db in try db.execute(sql: "INSERT INTO grdb_migrations(identifier) VALUES ('server-v99-future')") }
        let schema = try await newer.read { try String.fetchAll($0, sql: "SELECT name || coalesce(sql, '') FROM sqlite_master ORDER BY name") }
        try newer.close()
        XCTAssertThrowsError(try ServerCatalog(dataPath: data)) { error in
            let message = (error as? ServerError)?.message ?? "\(error)"
            XCTAssertTrue(message.contains("newer receipt") && message.contains("server-v99-future")
                          && message.contains("upgrade receipt"), message)
        }
        let result = try await CLI.run(["server", "account-list", "--data", data], in: folder)
        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(result.stderr.contains("newer receipt"), result.stderr)
        XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.stderr)
        let after = try DatabaseQueue(path: path)
        let schemaAfter = try await after.read { try String.fetchAll($0, sql: "SELECT name || coalesce(sql, '') FROM sqlite_master ORDER BY name") }
        try after.close()
        XCTAssertEqual(schemaAfter, schema)
    }

    /// The word search's triggers of the first release with it took, for a record's document, the
    /// texts of the records of that id in every zone: such documents are written again, and from
    /// then on a record's words are its own.
    func testDocumentsGivenAnotherZonesTextsAreWrittenAgain() async throws {
        let folder = TemporaryFolder("receipt-server-migration")
        let data = folder.file("server")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let path = data + "/" + ServerCatalog.fileName
        let memo = String(repeating: "c", count: 64)
        do {
            let old = try DatabaseQueue(path: path)
            try ServerCatalog.migrator.migrate(old, upTo: "server-web-search")
            try await old.write { db in
                try db.execute(sql: "INSERT INTO accounts(id, name, createdAt) VALUES (1, 'alice', 5)")
                try db.execute(sql: "INSERT INTO tokens(accountID, label, tokenHash, createdAt) VALUES (1, 'test', ?, 5)",
                               arguments: [ServerRules.tokenHash(Self.token)])
                try db.execute(sql: "INSERT INTO blobs(sha256, size, createdAt, touchedAt) VALUES (?, 10, 6, 6), (?, 10, 6, 6)",
                               arguments: [Self.blob, memo])
                try db.execute(sql: "INSERT INTO zones(id, uid, ownerID, name, seq, createdAt) VALUES (1, 'u1', 1, 'home', 1, 5), (2, 'u2', 1, 'work', 1, 5)")
                try db.execute(sql: "INSERT INTO blobTexts(sha256, version, text, uploadedAt) VALUES (?, 'v1', 'Sourdough Roggenbrot', 7), (?, 'v1', 'confidential merger', 7)",
                               arguments: [Self.blob, memo])
                try db.execute(sql: "INSERT INTO records(zoneID, id, changeTag, seq, payload) VALUES (2, '\(Self.r1)', 't0', 1, ?), (1, '\(Self.r1)', 't1', 1, ?)",
                               arguments: [Self.payload, Self.payload])
                try db.execute(sql: "INSERT INTO recordBlobs(zoneID, recordID, sha256) VALUES (2, '\(Self.r1)', ?), (1, '\(Self.r1)', ?)",
                               arguments: [memo, Self.blob])
            }
            let polluted = try await old.read { db in
                try Int.fetchOne(db, sql: "SELECT count(*) FROM webSearch WHERE webSearch MATCH 'merger'") ?? 0
            }
            XCTAssertEqual(polluted, 2, "the released triggers gave home's r1 the text of work's r1")
            try old.close()
        }
        let catalog = try ServerCatalog(dataPath: data)
        let found = try await catalog.authenticate(token: Self.token)
        let alice = try XCTUnwrap(found)
        func home(_ words: [String]) async throws -> [String] {
            try await catalog.webZonePage(owner: "alice", name: "home", filter: WebFilter(words: words), offset: 0, limit: 50,
                                          caller: alice).receipts.map(\.id)
        }
        let lent = try await home(["merger"])
        XCTAssertEqual(lent, [], "written again with its own texts")
        let own = try await home(["roggenbrot"])
        XCTAssertEqual(own, [Self.r1])
        try catalog.close()
    }

    func testAnOldPostgreSQLSchemaIsMigratedInPlaceAndANewerOneRefused() async throws {
        let cluster = try PostgresCluster.shared()
        let url = try cluster.createDatabase()
        let folder = TemporaryFolder("receipt-server-migration-pg")
        let data = folder.file("server")
        // Version 1, as the first PostgreSQL-capable receipt left it, with an account and a blob.
        try Self.oldPostgres(cluster, url, version: 1, """
            INSERT INTO records(zone_id, id, change_tag, seq, payload) VALUES (1, '\(Self.r1)', 't1', 1, '\(Self.payload)'), (1, '\(Self.r2)', 't2', 2, NULL);
            """)
        let store = try await ServerDatabase(url).open(dataPath: data)
        let alice = try await store.authenticate(token: Self.token)
        XCTAssertEqual(alice?.name, "alice", "the account's token works after the migration")
        try await store.close()
        XCTAssertEqual(try cluster.psql(url, "SELECT search::text FROM web_rows").trimmingCharacters(in: .whitespacesAndNewlines),
                       "'1':2 '50':3 'bakery':1 'jpg':5 'rye':4", "the word search's documents are made for the rows there are")
        let trimmed = { (s: String) in s.trimmingCharacters(in: .whitespacesAndNewlines) }
        XCTAssertEqual(trimmed(try cluster.psql(url, "SELECT max(version) FROM receipt_schema")), "\(PostgresSchema.currentVersion)")
        XCTAssertEqual(trimmed(try cluster.psql(url, "SELECT count(*) FROM blobs")), "1")
        XCTAssertEqual(trimmed(try cluster.psql(url, "SELECT to_regclass('blob_texts') IS NOT NULL")), "t")
        XCTAssertEqual(trimmed(try cluster.psql(url, "SELECT string_agg(id || ':' || merchant || ':' || date || ':' || amount, ',') FROM web_rows")),
                       Self.r1 + ":bakery:2020-01-02:1.50", "the web list's rows are made for the live records")

        try cluster.psql(url, "UPDATE receipt_schema SET version = 99")
        do {
            let opened = try await ServerDatabase(url).open(dataPath: data)
            try? await opened.close()
            XCTFail("a schema of a newer receipt was opened")
        } catch {
            let message = (error as? ServerError)?.message ?? "\(error)"
            XCTAssertTrue(message.contains("newer receipt") && message.contains("upgrade receipt"), message)
        }
        XCTAssertEqual(trimmed(try cluster.psql(url, "SELECT max(version) FROM receipt_schema")), "99")
        let result = try await CLI.run(["server", "account-list", "--data", data, "--database", url], in: folder)
        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(result.stderr.contains("newer receipt"), result.stderr)
    }

    /// A database as the receipt of schema `version` left it, with alice, her token, a blob and the
    /// zone home; then `rows`.
    static func oldPostgres(_ cluster: PostgresCluster, _ url: String, version: Int, _ rows: String) throws {
        let schema = (1...version).flatMap(PostgresSchema.sql(ofVersion:)).joined(separator: ";\n")
        try cluster.psql(url, schema + """
            ;
            CREATE TABLE receipt_schema (version INTEGER NOT NULL);
            INSERT INTO receipt_schema(version) VALUES (\(version));
            INSERT INTO accounts(id, name, created_at) VALUES (1, 'alice', 5);
            INSERT INTO tokens(account_id, label, token_hash, created_at) VALUES (1, 'default', '\(ServerRules.tokenHash(Self.token))', 5);
            INSERT INTO blobs(sha256, size, created_at, touched_at) VALUES ('\(Self.blob)', 10, 6, 6);
            INSERT INTO zones(id, uid, owner_id, name, seq, created_at) VALUES (1, 'u1', 1, 'home', 2, 5);
            \(rows)
            """)
    }

    /// The migrated catalog finds the record r1 by its metadata and by the text of its blob.
    static func assertSearchable(_ store: any ServerStore, _ caller: Account?) async throws {
        let web = try XCTUnwrap(store as? any WebStore)
        let alice = try XCTUnwrap(caller)
        for words in [["bakery"], ["sourd", "roggen"], ["rye", "sourdough"]] {
            let page = try await web.webZonePage(owner: "alice", name: "home", filter: WebFilter(words: words), offset: 0, limit: 50,
                                                 caller: alice)
            XCTAssertEqual(page.receipts.map(\.id), [Self.r1], "\(words)")
        }
    }

    /// A database of version 3 (the release before word search) with a text a member synced: its
    /// rows and texts are indexed by the migration.
    func testAPostgreSQLDatabaseOfTheReleaseBeforeWordSearchIsIndexedFromWhatItHolds() async throws {
        let cluster = try PostgresCluster.shared()
        let url = try cluster.createDatabase()
        let folder = TemporaryFolder("receipt-server-migration-pg-search")
        try Self.oldPostgres(cluster, url, version: 3, """
            INSERT INTO records(zone_id, id, change_tag, seq, payload) VALUES (1, '\(Self.r1)', 't1', 1, '\(Self.payload)');
            INSERT INTO record_blobs(zone_id, record_id, sha256) VALUES (1, '\(Self.r1)', '\(Self.blob)');
            INSERT INTO blob_texts(sha256, version, text, uploaded_at) VALUES ('\(Self.blob)', 'v1', 'Sourdough Roggenbrot', 7);
            """)
        let store = try await ServerDatabase(url).open(dataPath: folder.file("server"))
        let alice = try await store.authenticate(token: Self.token)
        do {
            try await Self.assertSearchable(store, alice)
        } catch {
            XCTFail("\(error)")
        }
        try await store.close()
    }

    /// A role that may not create the extension unaccent gets one sentence saying what to run, and
    /// the database is left as it was; once an administrator created it, the same role migrates.
    func testARoleThatCannotCreateUnaccentIsToldWhatToRunAndNothingChanges() async throws {
        let cluster = try PostgresCluster.shared()
        let url = try cluster.createDatabase()
        let role = "plain_\(getpid())"
        try cluster.psql(url, "CREATE ROLE \(role) LOGIN; GRANT CREATE ON SCHEMA public TO \(role)")
        let plain = url.replacingOccurrences(of: "//\(cluster.user)@", with: "//\(role)@")
        let folder = TemporaryFolder("receipt-server-migration-pg-unaccent")
        let result = try await CLI.run(["server", "account-add", "alice", "--data", folder.file("server"), "--database", plain], in: folder)
        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(result.stderr.contains("unaccent") && result.stderr.contains("CREATE EXTENSION unaccent")
                      && result.stderr.contains("nothing was changed"), result.stderr)
        XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.stderr)
        XCTAssertEqual(try cluster.psql(url, "SELECT to_regclass('receipt_schema') IS NULL").trimmingCharacters(in: .whitespacesAndNewlines), "t")
        try cluster.psql(url, "CREATE EXTENSION unaccent")
        let again = try await CLI.run(["server", "account-add", "alice", "--data", folder.file("server"), "--database", plain], in: folder)
        XCTAssertEqual(again.status, 0, again.stderr)
    }
}
