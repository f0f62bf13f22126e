import GRDB

/// Texts per zone owner, and records counted against quotas (migration "server-texts-per-owner").
///
/// Until it, a text was kept once per blob and version for the whole server, so whoever stored it
/// first set the searchable text of every household holding the same bytes. Now each owner (a
/// household) has its own: `blobTexts` is keyed by (ownerID, sha256, version) and every search
/// document reads only its zone owner's texts. Each existing text is copied to every owner of a
/// zone referencing its blob, so every household keeps the text it read and searched by. The
/// texts of blobs no record references (which nobody could read) are kept aside, untouched, in
/// `blobTextsUnowned`, and go with their blob when the server's gc collects it; nothing is deleted.
///
/// `bytes` (a text's size) and `zones.recordBytes` (the bytes of a zone's records) are what the
/// quota counts of texts and records (ServerCatalog+Quota.swift's usage), kept so it never reads them.
extension ServerCatalog {
    static func registerTextOwnersMigration(_ m: inout DatabaseMigrator) {
        m.registerMigration("server-texts-per-owner") { db in
            try db.execute(sql: """
                DROP TRIGGER webRows_search_insert;
                DROP TRIGGER recordBlobs_search_insert;
                DROP TRIGGER recordBlobs_search_delete;
                DROP TRIGGER blobTexts_search_insert;
                DROP TRIGGER blobTexts_search_update;
                DROP TRIGGER blobTexts_search_delete;
                ALTER TABLE blobTexts RENAME TO blobTextsUnowned;
                \(ownerTextsTable("blobTexts", address: "sha256 TEXT NOT NULL"))
                CREATE INDEX blobTexts_by_blob ON blobTexts(sha256, version);
                -- The quota sums an owner's text bytes from this index alone, never reading a text.
                CREATE INDEX blobTexts_bytes ON blobTexts(ownerID, bytes);
                INSERT INTO blobTexts(ownerID, sha256, version, bytes, text, failure, uploadedAt)
                    SELECT DISTINCT z.ownerID, t.sha256, t.version, length(CAST(coalesce(t.text, t.failure) AS BLOB)),
                           t.text, t.failure, t.uploadedAt
                    FROM blobTextsUnowned t JOIN recordBlobs rb ON rb.sha256 = t.sha256 JOIN zones z ON z.id = rb.zoneID;
                DELETE FROM blobTextsUnowned WHERE sha256 IN (SELECT sha256 FROM recordBlobs);
                ALTER TABLE zones ADD COLUMN recordBytes INTEGER NOT NULL DEFAULT 0;
                UPDATE zones SET recordBytes = (
                    SELECT coalesce(sum(\(StorageUse.recordRowBytes) + coalesce(length(CAST(payload AS BLOB)), 0)), 0)
                    FROM records WHERE zoneID = zones.id);
                \(searchTriggers)
                """)
        }
    }

    /// The owners' texts' table, its address column `address` (text, then bytes since server-keys-as-bytes).
    static func ownerTextsTable(_ name: String, address: String) -> String {
        """
        CREATE TABLE \(name) (
            ownerID INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
            \(address) REFERENCES blobs(sha256) ON DELETE CASCADE,
            version TEXT NOT NULL,
            bytes INTEGER NOT NULL,
            text TEXT,
            failure TEXT,
            uploadedAt INTEGER NOT NULL,
            PRIMARY KEY (ownerID, sha256, version),
            CHECK ((text IS NULL) <> (failure IS NULL))
        ) WITHOUT ROWID;
        """
    }

    static func registerSearchTextsByRecordMigration(_ m: inout DatabaseMigrator) {
        // The texts of a document were found from the owner's texts, each then matched to the
        // record's blobs: every text stored, and every push of a blob with one, read all the owner's
        // texts (a first sync of 10,000 receipts 3.5x as long as before server-texts-per-owner). The
        // same triggers again, the record's blobs leading (ownerTexts).
        m.registerMigration("server-web-search-texts-by-record") { db in
            for name in searchTriggerNames { try db.execute(sql: "DROP TRIGGER \(name)") }
            try db.execute(sql: searchTriggers)
        }
    }

    /// The search documents' triggers over owners' texts, and their names.
    static let searchTriggerNames = ["webRows_search_insert", "recordBlobs_search_insert", "recordBlobs_search_delete",
                                     "blobTexts_search_insert", "blobTexts_search_delete"]
    static let searchTriggers = """
        CREATE TRIGGER webRows_search_insert AFTER INSERT ON webRows BEGIN
            INSERT INTO webSearch(rowid, meta, text) VALUES (new.docID, new.words, \(ownerTexts(zone: "new.zoneID", id: "new.id")));
        END;
        CREATE TRIGGER recordBlobs_search_insert AFTER INSERT ON recordBlobs
        WHEN \(ownerHasText(zone: "new.zoneID", blob: "new.sha256")) BEGIN
            \(refreshDocument(zone: "new.zoneID", id: "new.recordID"))
        END;
        CREATE TRIGGER recordBlobs_search_delete AFTER DELETE ON recordBlobs
        WHEN \(ownerHasText(zone: "old.zoneID", blob: "old.sha256")) BEGIN
            \(refreshDocument(zone: "old.zoneID", id: "old.recordID"))
        END;
        CREATE TRIGGER blobTexts_search_insert AFTER INSERT ON blobTexts WHEN new.text IS NOT NULL BEGIN
            \(refreshDocuments(owner: "new.ownerID", blob: "new.sha256"))
        END;
        CREATE TRIGGER blobTexts_search_delete AFTER DELETE ON blobTexts WHEN old.text IS NOT NULL BEGIN
            \(refreshDocuments(owner: "old.ownerID", blob: "old.sha256"))
        END;
        """

    /// The texts the record's zone owner has of the record's blobs (any extractor version; failures
    /// have none). Its aliases are its own, so the record may be named by any outer alias. CROSS JOIN
    /// fixes SQLite's loop order: the record's few blobs first, then each one's text by its key (left
    /// to choose, the planner read every text of the owner). Same texts, same order (blob, version).
    static func ownerTexts(zone: String, id: String) -> String {
        """
        (SELECT group_concat(ot.text, ' ') FROM recordBlobs ob CROSS JOIN zones oz CROSS JOIN blobTexts ot
         WHERE oz.id = ob.zoneID AND ot.ownerID = oz.ownerID AND ot.sha256 = ob.sha256
           AND ob.zoneID = \(zone) AND ob.recordID = \(id) AND ot.text IS NOT NULL)
        """
    }

    static func ownerHasText(zone: String, blob: String) -> String {
        """
        EXISTS (SELECT 1 FROM zones hz JOIN blobTexts ht ON ht.ownerID = hz.ownerID
                WHERE hz.id = \(zone) AND ht.sha256 = \(blob) AND ht.text IS NOT NULL)
        """
    }

    /// Statements that write the search document of the record `zone`/`id` again.
    static func refreshDocument(zone: String, id: String) -> String {
        """
        DELETE FROM webSearch WHERE rowid = (SELECT docID FROM webRows WHERE zoneID = \(zone) AND id = \(id));
        INSERT INTO webSearch(rowid, meta, text)
            SELECT docID, words, \(ownerTexts(zone: "webRows.zoneID", id: "webRows.id")) FROM webRows
            WHERE zoneID = \(zone) AND id = \(id);
        """
    }

    /// Statements that write again the documents of the owner's records referencing the blob.
    static func refreshDocuments(owner: String, blob: String) -> String {
        let rows = """
            recordBlobs rb JOIN zones z ON z.id = rb.zoneID JOIN webRows w ON w.zoneID = rb.zoneID AND w.id = rb.recordID
            WHERE rb.sha256 = \(blob) AND z.ownerID = \(owner)
            """
        return """
            DELETE FROM webSearch WHERE rowid IN (SELECT w.docID FROM \(rows));
            INSERT INTO webSearch(rowid, meta, text) SELECT w.docID, w.words, \(ownerTexts(zone: "w.zoneID", id: "w.id")) FROM \(rows);
            """
    }
}
