import BlobStore
import GRDB
import ReceiptCatalog

/// Migration "server-keys-as-bytes": every record id is its 16 bytes and every blob address its 32
/// (BLOBs), not their 36 and 64 characters, in every table and index that holds one (`records`,
/// `recordBlobs`, `webRows`, `blobs`, `possessions`, `blobTexts`, `blobTextsUnowned`), as the vault's
/// catalog keeps them since v12 and v14; text only at the edges (the wire, the web's routes, logs):
/// `StoredKey` converts where the store binds and reads them. See "Server keys as bytes" in
/// docs/DESIGN.md.
///
/// SQLite cannot change a column's type in place, so each table is made again (rows copied with
/// their keys converted, the old table dropped, the new renamed) in the migrator's one transaction:
/// a catalog is converted whole or not at all. `webRows` keeps its `docID`s, so the search index
/// (`webSearch`, whose rowids they are) is kept as it is. An id a client sent in upper case before
/// pushes were canonicalised becomes its lowercase bytes; a value that is no UUID or no lowercase
/// address, or two ids of one zone that would then be one, are refused before the first change,
/// first through a read-only connection (`ServerCatalog.init`), so a refused catalog is untouched.
extension ServerCatalog {
    static let byteKeysMigration = "server-keys-as-bytes"

    static func registerByteKeysMigration(_ m: inout DatabaseMigrator) {
        m.registerMigration(byteKeysMigration) { db in
            try refuseUnconvertibleKeys(db)
            for name in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'trigger'") {
                try db.execute(sql: "DROP TRIGGER \(name.quotedDatabaseIdentifier)")
            }
            db.add(function: BlobID.bytesFunction)
            db.add(function: ReceiptID.bytesFunction)
            defer {
                db.remove(function: BlobID.bytesFunction)
                db.remove(function: ReceiptID.bytesFunction)
            }
            try db.execute(sql: byteKeyTables)
            try db.execute(sql: webRowsTriggers + webRowsSearchDelete + searchTriggers)
        }
    }

    /// The column of a record id: 16 bytes and nothing else (a text bound by mistake fails here
    /// instead of never matching).
    static func recordIDColumn(_ name: String) -> String {
        "\(name) BLOB NOT NULL CHECK (typeof(\(name)) = 'blob' AND length(\(name)) = 16)"
    }

    /// The column of a blob address: 32 bytes and nothing else.
    static let addressColumn = "sha256 BLOB NOT NULL CHECK (typeof(sha256) = 'blob' AND length(sha256) = 32)"

    private static let byteKeyTables = """
        CREATE TABLE recordsV2 (
            zoneID INTEGER NOT NULL REFERENCES zones(id) ON DELETE CASCADE,
            \(recordIDColumn("id")),
            changeTag TEXT NOT NULL,
            seq INTEGER NOT NULL,
            payload TEXT,
            PRIMARY KEY (zoneID, id)
        ) WITHOUT ROWID;
        INSERT INTO recordsV2(zoneID, id, changeTag, seq, payload)
            SELECT zoneID, receipt_id_bytes(id), changeTag, seq, payload FROM records ORDER BY zoneID, lower(id);
        CREATE TABLE blobsV2 (
            \(addressColumn) PRIMARY KEY,
            size INTEGER NOT NULL,
            createdAt INTEGER NOT NULL,
            touchedAt INTEGER NOT NULL DEFAULT 0
        ) WITHOUT ROWID;
        INSERT INTO blobsV2(sha256, size, createdAt, touchedAt)
            SELECT receipt_unhex(sha256), size, createdAt, touchedAt FROM blobs ORDER BY sha256;
        CREATE TABLE recordBlobsV2 (
            zoneID INTEGER NOT NULL,
            \(recordIDColumn("recordID")),
            \(addressColumn) REFERENCES blobs(sha256),
            PRIMARY KEY (zoneID, recordID, sha256),
            FOREIGN KEY (zoneID, recordID) REFERENCES records(zoneID, id) ON DELETE CASCADE
        ) WITHOUT ROWID;
        INSERT INTO recordBlobsV2(zoneID, recordID, sha256)
            SELECT zoneID, receipt_id_bytes(recordID), receipt_unhex(sha256) FROM recordBlobs ORDER BY zoneID, lower(recordID), sha256;
        CREATE TABLE possessionsV2 (
            accountID INTEGER NOT NULL REFERENCES accounts(id),
            \(addressColumn) REFERENCES blobs(sha256),
            PRIMARY KEY (accountID, sha256)
        ) WITHOUT ROWID;
        INSERT INTO possessionsV2(accountID, sha256)
            SELECT accountID, receipt_unhex(sha256) FROM possessions ORDER BY accountID, sha256;
        \(ownerTextsTable("blobTextsV2", address: addressColumn))
        INSERT INTO blobTextsV2(ownerID, sha256, version, bytes, text, failure, uploadedAt)
            SELECT ownerID, receipt_unhex(sha256), version, bytes, text, failure, uploadedAt FROM blobTexts
            ORDER BY ownerID, sha256, version;
        \(textsTable("blobTextsUnownedV2", address: addressColumn))
        INSERT INTO blobTextsUnownedV2(sha256, version, text, failure, uploadedAt)
            SELECT receipt_unhex(sha256), version, text, failure, uploadedAt FROM blobTextsUnowned ORDER BY sha256, version;
        -- docID kept: the search index's rowids are the rows' docIDs.
        CREATE TABLE webRowsV2 (
            docID INTEGER PRIMARY KEY,
            zoneID INTEGER NOT NULL,
            \(webRowsColumns(id: recordIDColumn("id"))),
            UNIQUE (zoneID, id)
        );
        INSERT INTO webRowsV2(docID, zoneID, id, date, createdAt, merchant, category, status, currency, total, words)
            SELECT docID, zoneID, receipt_id_bytes(id), date, createdAt, merchant, category, status, currency, total, words
            FROM webRows ORDER BY docID;
        DROP TABLE webRows;
        DROP TABLE recordBlobs;
        DROP TABLE records;
        DROP TABLE possessions;
        DROP TABLE blobTexts;
        DROP TABLE blobTextsUnowned;
        DROP TABLE blobs;
        ALTER TABLE recordsV2 RENAME TO records;
        ALTER TABLE blobsV2 RENAME TO blobs;
        ALTER TABLE recordBlobsV2 RENAME TO recordBlobs;
        ALTER TABLE possessionsV2 RENAME TO possessions;
        ALTER TABLE blobTextsV2 RENAME TO blobTexts;
        ALTER TABLE blobTextsUnownedV2 RENAME TO blobTextsUnowned;
        ALTER TABLE webRowsV2 RENAME TO webRows;
        CREATE INDEX records_by_seq ON records(zoneID, seq);
        CREATE INDEX records_to_review ON records(zoneID, id) WHERE \(hasReadings);
        CREATE INDEX recordBlobs_by_blob ON recordBlobs(sha256);
        CREATE INDEX possessions_by_blob ON possessions(sha256);
        CREATE INDEX blobTexts_by_blob ON blobTexts(sha256, version);
        -- The quota sums an owner's text bytes from this index alone, never reading a text.
        CREATE INDEX blobTexts_bytes ON blobTexts(ownerID, bytes);
        \(webRowsIndexes)
        """

    /// The tables and columns holding a record id, and those holding a blob address.
    static let recordIDColumns = [("records", "id"), ("recordBlobs", "recordID"), ("webRows", "id")]
    static let addressTables = ["blobs", "recordBlobs", "possessions", "blobTexts", "blobTextsUnowned"]

    /// Refuses, before any change, a catalog holding a record id that is no UUID, two ids of one zone
    /// differing only in case, or a blob address that is not 64 lowercase hex digits: the error names
    /// the table and the value. Run on a read-only connection first (`refuseUnconvertibleKeysBeforeMigrating`).
    static func refuseUnconvertibleKeys(_ db: Database) throws {
        func refuse(_ table: String, _ what: String) -> DatabaseError {
            DatabaseError(resultCode: .SQLITE_CONSTRAINT_CHECK,
                          message: "table \(table) holds \(what) (migration \(byteKeysMigration)); nothing was changed")
        }
        func shown(_ quoted: String) -> Substring { quoted.count > 80 ? quoted.prefix(77) + "..." : quoted[...] }
        for (table, column) in recordIDColumns where try db.tableExists(table) {
            if let bad = try String.fetchOne(db, sql: """
                SELECT quote(\(column)) FROM \(table) WHERE typeof(\(column)) <> 'text' OR \(column) NOT GLOB '\(Catalog.uuidPattern)' LIMIT 1
                """) {
                throw refuse(table, "the record id \(shown(bad)), which is no UUID")
            }
        }
        if try db.tableExists("records"), let twins = try Row.fetchOne(db, sql: """
            SELECT min(id), max(id) FROM records GROUP BY zoneID, lower(id) HAVING count(*) > 1 LIMIT 1
            """) {
            throw refuse("records", "the record ids '\(twins[0] as String)' and '\(twins[1] as String)' in one zone, one id in two cases")
        }
        for table in addressTables where try db.tableExists(table) {
            if let bad = try String.fetchOne(db, sql: """
                SELECT quote(sha256) FROM \(table) WHERE typeof(sha256) <> 'text' OR length(sha256) <> 64 OR sha256 GLOB '*[^0-9a-f]*' LIMIT 1
                """) {
                throw refuse(table, "the blob address \(shown(bad)), which is not 64 lowercase hex digits")
            }
        }
    }

    /// The check of `refuseUnconvertibleKeys` on the pool's read-only connection, unless the catalog
    /// is converted already: a refused catalog is left byte for byte as it was, and no pre-upgrade
    /// copy is made of it.
    static func refuseUnconvertibleKeysBeforeMigrating(_ pool: DatabasePool) throws {
        try pool.read { db in
            guard try !migrator.appliedIdentifiers(db).contains(byteKeysMigration) else { return }
            try refuseUnconvertibleKeys(db)
        }
    }
}

/// The id or address a text of the wire names, when it is one as the server writes it (lowercase):
/// both stores bind these, and anything else matches nothing.
enum ServerKey {
    /// A web route takes an id as it comes (`/z/…/r/ID`): one in upper case is not the record's.
    static func record(_ id: String) -> ReceiptID? {
        var id = id
        return id.withUTF8 { bytes in
            for byte in bytes where byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "F") { return nil }
            return ReceiptID(utf8: bytes)
        }
    }

    /// Every address reaches the stores checked as 64 lowercase hex digits (`ServerRules.blobAddress`,
    /// the wire's validation, the routes' paths), so it is only parsed here.
    static func blob(_ sha256: String) -> BlobID? { BlobID(hex: sha256) }
}

/// Record ids and blob addresses as the server catalog stores them since `server-keys-as-bytes`:
/// the rules hand them over as text (what the wire carries), the store binds their bytes and reads
/// them back as text.
enum StoredKey {
    /// A record id's 16 bytes. A text that is no id as the server writes one (lowercase; a pushed id
    /// is lowercased by the rules first) is bound as it is: no stored id equals it (a lookup finds
    /// nothing, as before: the web's routes answer 404 for `ABCDEF00-…`), and a write of it fails
    /// the column's check.
    static func record(_ id: String) -> DatabaseValue { ServerKey.record(id)?.databaseValue ?? id.databaseValue }

    /// A blob address's 32 bytes; any text that is not 64 lowercase hex digits is bound as it is, as
    /// `record`'s.
    static func blob(_ sha256: String) -> DatabaseValue { ServerKey.blob(sha256)?.databaseValue ?? sha256.databaseValue }

    /// The id stored in a column, as the wire writes it (lowercase 8-4-4-4-12).
    static func recordID(_ value: DatabaseValue) -> String {
        ReceiptID.fromDatabaseValue(value)?.text ?? String.fromDatabaseValue(value) ?? "\(value)"
    }

    /// The address stored in a column, as 64 lowercase hex digits.
    static func address(_ value: DatabaseValue) -> String {
        BlobID.fromDatabaseValue(value)?.hex ?? String.fromDatabaseValue(value) ?? "\(value)"
    }
}
