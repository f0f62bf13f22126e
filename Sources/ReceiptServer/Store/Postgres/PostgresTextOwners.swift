import PostgresNIO

/// Schema version 6: texts per zone owner, and the bytes of each zone's records, as the embedded
/// catalog's migration "server-texts-per-owner" (the SQLite store's, which says why):
/// every existing text copied to each owner of a zone referencing its blob, the texts of blobs no
/// record references kept aside, untouched, in `blob_texts_unowned` until gc collects their blob,
/// and every search document reading its zone owner's texts only.
enum PostgresTextOwners {
    static let migration: [PostgresQuery] = [
        "DROP TRIGGER blob_texts_search ON blob_texts",
        "ALTER TABLE blob_texts RENAME TO blob_texts_unowned",
        "ALTER TABLE blob_texts_unowned RENAME CONSTRAINT blob_texts_pkey TO blob_texts_unowned_pkey",
        """
        CREATE TABLE blob_texts (
            owner_id BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
            sha256 TEXT NOT NULL REFERENCES blobs(sha256) ON DELETE CASCADE,
            version TEXT NOT NULL,
            bytes BIGINT NOT NULL,
            text TEXT,
            failure TEXT,
            uploaded_at BIGINT NOT NULL,
            PRIMARY KEY (owner_id, sha256, version),
            CHECK ((text IS NULL) <> (failure IS NULL)))
        """,
        "CREATE INDEX blob_texts_by_blob ON blob_texts(sha256, version)",
        // The quota sums an owner's text bytes from this index alone, never reading a text.
        "CREATE INDEX blob_texts_bytes ON blob_texts(owner_id) INCLUDE (bytes)",
        """
        INSERT INTO blob_texts(owner_id, sha256, version, bytes, text, failure, uploaded_at)
        SELECT DISTINCT z.owner_id, t.sha256, t.version, octet_length(coalesce(t.text, t.failure)), t.text, t.failure, t.uploaded_at
        FROM blob_texts_unowned t JOIN record_blobs rb ON rb.sha256 = t.sha256 JOIN zones z ON z.id = rb.zone_id
        """,
        "DELETE FROM blob_texts_unowned WHERE sha256 IN (SELECT sha256 FROM record_blobs)",
        """
        CREATE OR REPLACE FUNCTION receipt_web_document(words text, zone bigint, record text) RETURNS tsvector LANGUAGE sql STABLE AS $$
            SELECT to_tsvector('simple', left(receipt_web_fold(words || ' ' || coalesce(
                (SELECT string_agg(t.text, ' ') FROM record_blobs rb JOIN zones z ON z.id = rb.zone_id
                 JOIN blob_texts t ON t.owner_id = z.owner_id AND t.sha256 = rb.sha256
                 WHERE rb.zone_id = zone AND rb.record_id = record AND t.text IS NOT NULL), '')), 250000))
        $$
        """,
        // A text written or deleted rewrites the documents of its owner's records referencing its
        // blob; a blob added to or removed from a record, that record's, when its owner has a text of it.
        """
        CREATE OR REPLACE FUNCTION receipt_web_blob_search() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE changed record;
        BEGIN
            changed := CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
            IF TG_TABLE_NAME = 'blob_texts' THEN
                UPDATE web_rows w SET search = receipt_web_document(w.words, w.zone_id, w.id)
                FROM record_blobs rb JOIN zones z ON z.id = rb.zone_id
                WHERE rb.sha256 = changed.sha256 AND z.owner_id = changed.owner_id AND w.zone_id = rb.zone_id AND w.id = rb.record_id;
            ELSIF EXISTS (SELECT 1 FROM zones z JOIN blob_texts t ON t.owner_id = z.owner_id
                          WHERE z.id = changed.zone_id AND t.sha256 = changed.sha256 AND t.text IS NOT NULL) THEN
                UPDATE web_rows SET search = receipt_web_document(words, zone_id, id)
                WHERE zone_id = changed.zone_id AND id = changed.record_id;
            END IF;
            RETURN NULL;
        END $$
        """,
        "CREATE TRIGGER blob_texts_search AFTER INSERT OR DELETE ON blob_texts FOR EACH ROW EXECUTE FUNCTION receipt_web_blob_search()",
        "ALTER TABLE zones ADD COLUMN record_bytes BIGINT NOT NULL DEFAULT 0",
        """
        UPDATE zones SET record_bytes = (
            SELECT coalesce(sum(\(unescaped: String(StorageUse.recordRowBytes)) + coalesce(octet_length(payload), 0)), 0) FROM records WHERE zone_id = zones.id)
        """,
    ]
}
