import Foundation
import GRDB

extension ServerCatalog {
    /// `webSearch`: an FTS5 table whose rowid is a `webRows` row's `docID` (so `webRows`, until now
    /// keyed by zone and id alone, is made again with one), over its `words` and the text of its
    /// blobs. Triggers keep it in the writer's transaction: a row of `webRows` written or deleted
    /// (every write of `records` makes one), a blob added to or removed from a record, a text
    /// arriving for a blob (every record referencing it is rewritten). A catalog migrated from an
    /// earlier version is indexed here from the records and texts it holds.
    static func registerWebSearchMigration(_ m: inout DatabaseMigrator) {
        m.registerMigration("server-web-search") { db in
            // As released (server-web-search-record-texts below replaces the triggers that use it).
            func refresh(zone: String, id: String) -> String {
                """
                DELETE FROM webSearch WHERE rowid = (SELECT docID FROM webRows WHERE zoneID = \(zone) AND id = \(id));
                INSERT INTO webSearch(rowid, meta, text)
                    SELECT docID, words, \(recordTexts(zone: "zoneID", id: "id")) FROM webRows WHERE zoneID = \(zone) AND id = \(id);
                """
            }
            func refresh(blob: String) -> String {
                let rows = "recordBlobs rb JOIN webRows w ON w.zoneID = rb.zoneID AND w.id = rb.recordID WHERE rb.sha256 = \(blob)"
                return """
                    DELETE FROM webSearch WHERE rowid IN (SELECT w.docID FROM \(rows));
                    INSERT INTO webSearch(rowid, meta, text) SELECT w.docID, w.words, \(recordTexts(zone: "w.zoneID", id: "w.id")) FROM \(rows);
                    """
            }
            try db.execute(sql: """
                DROP TRIGGER records_webRows_insert;
                DROP TRIGGER records_webRows_update;
                DROP TRIGGER records_webRows_delete;
                DROP TABLE webRows;
                -- docID: an INTEGER PRIMARY KEY, so that VACUUM keeps it (webSearch refers to it).
                CREATE TABLE webRows (
                    docID INTEGER PRIMARY KEY,
                    zoneID INTEGER NOT NULL,
                    \(webRowsColumns()),
                    UNIQUE (zoneID, id)
                );
                CREATE VIRTUAL TABLE webSearch USING fts5(meta, text, tokenize = 'unicode61 remove_diacritics 2');
                CREATE TRIGGER webRows_search_insert AFTER INSERT ON webRows BEGIN
                    INSERT INTO webSearch(rowid, meta, text) VALUES (new.docID, new.words, \(recordTexts(zone: "new.zoneID", id: "new.id")));
                END;
                \(webRowsSearchDelete)
                -- A push replaces a record's blobs after its row: only a blob with a text changes its document.
                CREATE TRIGGER recordBlobs_search_insert AFTER INSERT ON recordBlobs WHEN \(hasText("new.sha256")) BEGIN
                    \(refresh(zone: "new.zoneID", id: "new.recordID"))
                END;
                CREATE TRIGGER recordBlobs_search_delete AFTER DELETE ON recordBlobs WHEN \(hasText("old.sha256")) BEGIN
                    \(refresh(zone: "old.zoneID", id: "old.recordID"))
                END;
                CREATE TRIGGER blobTexts_search_insert AFTER INSERT ON blobTexts WHEN new.text IS NOT NULL BEGIN
                    \(refresh(blob: "new.sha256"))
                END;
                CREATE TRIGGER blobTexts_search_update AFTER UPDATE OF text ON blobTexts BEGIN
                    \(refresh(blob: "new.sha256"))
                END;
                CREATE TRIGGER blobTexts_search_delete AFTER DELETE ON blobTexts WHEN old.text IS NOT NULL BEGIN
                    \(refresh(blob: "old.sha256"))
                END;
                \(webRowsIndexesAndTriggers)
                """)
        }
        // The triggers above named the record's zone and id unqualified inside the texts' subquery,
        // where `zoneID` is the blob row's own: every push of a record with a text read all of
        // `recordBlobs` twice (30 ms a one-record push at 100,000 receipts), and a record's document
        // took the texts of the records of that id in every zone. Qualified now.
        m.registerMigration("server-web-search-record-texts") { db in
            try db.execute(sql: """
                DROP TRIGGER recordBlobs_search_insert;
                DROP TRIGGER recordBlobs_search_delete;
                CREATE TRIGGER recordBlobs_search_insert AFTER INSERT ON recordBlobs WHEN \(hasText("new.sha256")) BEGIN
                    \(refreshRecord(zone: "new.zoneID", id: "new.recordID"))
                END;
                CREATE TRIGGER recordBlobs_search_delete AFTER DELETE ON recordBlobs WHEN \(hasText("old.sha256")) BEGIN
                    \(refreshRecord(zone: "old.zoneID", id: "old.recordID"))
                END;
                -- Only a record whose id is in another zone too can have been given texts not its own.
                CREATE TEMP TABLE sharedIDs AS SELECT docID FROM webRows WHERE id IN (SELECT id FROM webRows GROUP BY id HAVING count(*) > 1);
                DELETE FROM webSearch WHERE rowid IN (SELECT docID FROM sharedIDs);
                INSERT INTO webSearch(rowid, meta, text)
                    SELECT docID, words, \(recordTexts(zone: "webRows.zoneID", id: "webRows.id")) FROM webRows
                    WHERE docID IN (SELECT docID FROM sharedIDs);
                DROP TABLE sharedIDs;
                """)
        }
    }

    static let webRowsSearchDelete = """
        CREATE TRIGGER webRows_search_delete AFTER DELETE ON webRows BEGIN
            DELETE FROM webSearch WHERE rowid = old.docID;
        END;
        """

    /// The texts of a record's blobs (any extractor version; failures have none), the record named by
    /// SQL for its zone and id. Inside this subquery `zoneID` alone is the blob row's: name them qualified.
    static func recordTexts(zone: String, id: String) -> String {
        """
        (SELECT group_concat(t.text, ' ') FROM recordBlobs b JOIN blobTexts t ON t.sha256 = b.sha256
         WHERE b.zoneID = \(zone) AND b.recordID = \(id) AND t.text IS NOT NULL)
        """
    }

    static func hasText(_ blob: String) -> String {
        "EXISTS (SELECT 1 FROM blobTexts WHERE sha256 = \(blob) AND text IS NOT NULL)"
    }

    /// Statements that write the search document of the record `zone`/`id` again.
    static func refreshRecord(zone: String, id: String) -> String {
        """
        DELETE FROM webSearch WHERE rowid = (SELECT docID FROM webRows WHERE zoneID = \(zone) AND id = \(id));
        INSERT INTO webSearch(rowid, meta, text)
            SELECT docID, words, \(recordTexts(zone: "webRows.zoneID", id: "webRows.id")) FROM webRows
            WHERE zoneID = \(zone) AND id = \(id);
        """
    }
}
