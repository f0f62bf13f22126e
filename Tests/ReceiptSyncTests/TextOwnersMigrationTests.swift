import Foundation
import GRDB
@testable import ReceiptServer
import TestSupport
import WebForms
import XCTest

/// The migration to texts per zone owner (SQLite "server-texts-per-owner", PostgreSQL version 6):
/// each text an owner's zones could read is copied to that owner, so every household keeps reading
/// and searching what it did; the text of a blob no record references is kept aside, untouched,
/// until gc collects the blob; each zone's records are counted for the quota. Nothing is deleted.
final class TextOwnersMigrationTests: XCTestCase {
    static let token = ServerMigrationTests.token
    static let shared = String(repeating: "b", count: 64)
    static let stray = String(repeating: "c", count: 64)
    static let payload = ServerMigrationTests.payload
    static let (r1, r2) = (ServerMigrationTests.r1, ServerMigrationTests.r2)
    /// Two live records (one in each household) and a deletion marker.
    static let recordBytes: [Int64] = [2 * StorageUse.recordRowBytes + Int64(payload.utf8.count),
                                       StorageUse.recordRowBytes + Int64(payload.utf8.count)]

    func testAnSQLiteCatalogKeepsEveryHouseholdsTextsAndDeletesNothing() async throws {
        let folder = TemporaryFolder("receipt-text-owners")
        let data = folder.file("server")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        do {
            let old = try DatabaseQueue(path: data + "/" + ServerCatalog.fileName)
            try ServerCatalog.migrator.migrate(old, upTo: "server-web-search-record-texts")
            try await old.write { db in
                try db.execute(sql: """
                    INSERT INTO accounts(id, name, createdAt) VALUES (1, 'alice', 5), (2, 'bob', 5);
                    INSERT INTO tokens(accountID, label, tokenHash, createdAt) VALUES (1, 'default', ?, 5);
                    INSERT INTO blobs(sha256, size, createdAt, touchedAt) VALUES (?, 10, 6, 6), (?, 10, 6, 6);
                    INSERT INTO zones(id, uid, ownerID, name, seq, createdAt) VALUES (1, 'u1', 1, 'home', 2, 5), (2, 'u2', 2, 'home', 1, 5);
                    INSERT INTO records(zoneID, id, changeTag, seq, payload) VALUES (1, '\(Self.r1)', 't1', 1, ?), (1, '\(Self.r2)', 't2', 2, NULL), (2, '\(Self.r1)', 't3', 1, ?);
                    INSERT INTO recordBlobs(zoneID, recordID, sha256) VALUES (1, '\(Self.r1)', ?), (2, '\(Self.r1)', ?);
                    INSERT INTO blobTexts(sha256, version, text, failure, uploadedAt)
                        VALUES (?, '1', 'Sourdough Roggenbrot', NULL, 7), (?, 'old', 'Sauerteig', NULL, 7), (?, '1', NULL, 'stray failure', 7);
                    """, arguments: [ServerRules.tokenHash(Self.token), Self.shared, Self.stray, Self.payload, Self.payload,
                                     Self.shared, Self.shared, Self.shared, Self.shared, Self.stray])
            }
            try old.close()
        }
        let catalog = try ServerCatalog(dataPath: data)
        let (texts, aside, recordBytes) = try await catalog.pool.read { db in
            (try String.fetchAll(db, sql: "SELECT ownerID || ':' || version || ':' || text || ':' || bytes FROM blobTexts ORDER BY ownerID, version"),
             try String.fetchAll(db, sql: "SELECT lower(hex(sha256)) || ':' || failure FROM blobTextsUnowned"),
             try Int64.fetchAll(db, sql: "SELECT recordBytes FROM zones ORDER BY id"))
        }
        XCTAssertEqual(texts, ["1:1:Sourdough Roggenbrot:20", "1:old:Sauerteig:9", "2:1:Sourdough Roggenbrot:20", "2:old:Sauerteig:9"])
        XCTAssertEqual(aside, [Self.stray + ":stray failure"], "a text nobody could read is kept aside, not deleted")
        XCTAssertEqual(recordBytes, Self.recordBytes)
        try await assertEachHouseholdKeepsItsTexts(catalog)
        // The blob nobody references goes at gc, and its text with it.
        _ = try await catalog.collectGarbage(graceSeconds: 0, dryRun: false)
        let left = try await catalog.pool.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM blobTextsUnowned") }
        XCTAssertEqual(left, 0)
        try catalog.close()
    }

    func testAPostgreSQLDatabaseKeepsEveryHouseholdsTextsAndDeletesNothing() async throws {
        let cluster = try PostgresCluster.shared()
        let url = try cluster.createDatabase()
        let folder = TemporaryFolder("receipt-text-owners-pg")
        try ServerMigrationTests.oldPostgres(cluster, url, version: 5, """
            INSERT INTO accounts(id, name, created_at) VALUES (2, 'bob', 5);
            INSERT INTO blobs(sha256, size, created_at, touched_at) VALUES ('\(Self.stray)', 10, 6, 6);
            INSERT INTO zones(id, uid, owner_id, name, seq, created_at) VALUES (2, 'u2', 2, 'home', 1, 5);
            INSERT INTO records(zone_id, id, change_tag, seq, payload)
                VALUES (1, '\(Self.r1)', 't1', 1, '\(Self.payload)'), (1, '\(Self.r2)', 't2', 2, NULL), (2, '\(Self.r1)', 't3', 1, '\(Self.payload)');
            INSERT INTO record_blobs(zone_id, record_id, sha256) VALUES (1, '\(Self.r1)', '\(Self.shared)'), (2, '\(Self.r1)', '\(Self.shared)');
            INSERT INTO blob_texts(sha256, version, text, failure, uploaded_at)
                VALUES ('\(Self.shared)', '1', 'Sourdough Roggenbrot', NULL, 7), ('\(Self.shared)', 'old', 'Sauerteig', NULL, 7),
                       ('\(Self.stray)', '1', NULL, 'stray failure', 7);
            """)
        let store = try await ServerDatabase(url).open(dataPath: folder.file("server"))
        func rows(_ sql: String) throws -> String { try cluster.psql(url, sql).trimmingCharacters(in: .whitespacesAndNewlines) }
        XCTAssertEqual(try rows("SELECT string_agg(owner_id || ':' || version || ':' || text || ':' || bytes, ',' ORDER BY owner_id, version) FROM blob_texts"),
                       "1:1:Sourdough Roggenbrot:20,1:old:Sauerteig:9,2:1:Sourdough Roggenbrot:20,2:old:Sauerteig:9")
        XCTAssertEqual(try rows("SELECT string_agg(encode(sha256, 'hex') || ':' || failure, ',') FROM blob_texts_unowned"), Self.stray + ":stray failure")
        XCTAssertEqual(try rows("SELECT string_agg(record_bytes::text, ',' ORDER BY id) FROM zones"),
                       Self.recordBytes.map(String.init).joined(separator: ","))
        do {
            try await assertEachHouseholdKeepsItsTexts(store)
            _ = try await store.collectGarbage(graceSeconds: 0, dryRun: false)
        } catch {
            XCTFail("\(error)")
        }
        try await store.close()
        XCTAssertEqual(try rows("SELECT count(*) FROM blob_texts_unowned"), "0")
    }

    /// Alice and bob each read the texts of the shared blob, find their record by them, and have them
    /// and their records counted against their own quota.
    func assertEachHouseholdKeepsItsTexts(_ store: any ServerStore) async throws {
        let web = try XCTUnwrap(store as? any WebStore)
        for name in ["alice", "bob"] {
            let found = try await store.authenticate(token: try await store.rotateToken(account: name, label: nil))
            let caller = try XCTUnwrap(found)
            let fetched = try await store.texts([Self.shared, Self.stray], version: "1", caller: caller, byteLimit: 1 << 20).texts
            XCTAssertEqual(fetched.map(\.text), ["Sourdough Roggenbrot"], name)
            let page = try await web.webZonePage(owner: name, name: "home", filter: WebFilter(words: ["sauerteig", "roggen"]), offset: 0,
                                                 limit: 50, caller: caller)
            XCTAssertEqual(page.receipts.map(\.id), [Self.r1], name)
        }
        let used = try await store.accounts()
        XCTAssertEqual(used.map(\.textBytes), [29, 29])
        XCTAssertEqual(used.map(\.recordBytes), Self.recordBytes)
    }
}
