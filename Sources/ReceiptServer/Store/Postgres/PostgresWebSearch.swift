import PostgresNIO

/// The web list's word search in PostgreSQL (schema version 4): `web_rows.search`, a tsvector of the
/// row's words and the text of its blobs, GIN-indexed, kept by triggers in the writer's transaction
/// as the embedded catalog keeps `webSearch`: a row of `web_rows` written (every
/// write of `records` makes one), a blob added to or removed from a record, a text arriving for a
/// blob (every record referencing it is rewritten).
///
/// Text is folded before PostgreSQL's parser sees it (`receipt_web_fold`): accents by the contrib
/// extension `unaccent`, case by ICU where the server has it (a database made with the C locale
/// would otherwise fold ASCII only), and ASCII punctuation to spaces, so that a word splits where
/// SQLite's unicode61 tokenizer splits it (`IMG_0042.jpg`, `23.45`, `hsa-7`) instead of being read
/// whole as a file name, a version or a hyphenated word.
enum PostgresWebSearch {
    static let migration: [PostgresQuery] = [
        // The only statement that needs more than the database's owner may have: one clear sentence
        // when it fails (the migration's transaction is then rolled back: nothing was changed).
        """
        DO $$ BEGIN
            CREATE EXTENSION IF NOT EXISTS unaccent;
        EXCEPTION WHEN OTHERS THEN
            RAISE EXCEPTION 'the web view''s word search needs the extension unaccent, which this database lacks and the role % cannot create (%): run CREATE EXTENSION unaccent; in it as its owner or a superuser (Debian''s postgresql package ships it), then start again; nothing was changed', current_user, SQLERRM;
        END $$
        """,
        """
        DO $$ BEGIN
            EXECUTE format($f$
                CREATE FUNCTION receipt_web_fold(t text) RETURNS text LANGUAGE sql STABLE AS $b$
                    SELECT regexp_replace(lower(unaccent(coalesce(t, '')) %s), '[!-/:-@\\[-`{-~]+', ' ', 'g')
                $b$ $f$, CASE WHEN EXISTS (SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu') THEN 'COLLATE "und-x-icu"' ELSE '' END);
        END $$
        """,
        // A record's document: its words, then its blobs' texts (any extractor version). A tsvector
        // holds at most 1 MB of distinct lexemes: the folded text is cut at 250,000 characters.
        """
        CREATE FUNCTION receipt_web_document(words text, zone bigint, record text) RETURNS tsvector LANGUAGE sql STABLE AS $$
            SELECT to_tsvector('simple', left(receipt_web_fold(words || ' ' || coalesce(
                (SELECT string_agg(t.text, ' ') FROM record_blobs rb JOIN blob_texts t ON t.sha256 = rb.sha256
                 WHERE rb.zone_id = zone AND rb.record_id = record AND t.text IS NOT NULL), '')), 250000))
        $$
        """,
        // Every word a phrase of its lexemes, the last a prefix; all words required. A word with no
        // lexeme is left out (`webZonePage` passes only words with a letter or a digit).
        """
        CREATE FUNCTION receipt_web_query(words text[]) RETURNS tsquery LANGUAGE sql STABLE AS $$
            SELECT coalesce(string_agg('(' || q::text || ':*)', ' & '), '')::tsquery
            FROM (SELECT phraseto_tsquery('simple', receipt_web_fold(w)) AS q FROM unnest(words) AS w) p
            WHERE numnode(q) > 0
        $$
        """,
        "ALTER TABLE web_rows ADD COLUMN search tsvector",
        """
        CREATE FUNCTION receipt_web_rows_search() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            NEW.search := receipt_web_document(NEW.words, NEW.zone_id, NEW.id);
            RETURN NEW;
        END $$
        """,
        "CREATE TRIGGER web_rows_search BEFORE INSERT ON web_rows FOR EACH ROW EXECUTE FUNCTION receipt_web_rows_search()",
        // One function for both tables: a blob added to or removed from a record rewrites that
        // record's document, and only when the blob has a text (a push replaces a record's blobs
        // after its row: without texts there is nothing to redo); a text written or deleted rewrites
        // the document of every record referencing its blob.
        """
        CREATE FUNCTION receipt_web_blob_search() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE changed record;
        BEGIN
            changed := CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
            IF TG_TABLE_NAME = 'blob_texts' THEN
                UPDATE web_rows w SET search = receipt_web_document(w.words, w.zone_id, w.id)
                FROM record_blobs rb WHERE rb.sha256 = changed.sha256 AND w.zone_id = rb.zone_id AND w.id = rb.record_id;
            ELSIF EXISTS (SELECT 1 FROM blob_texts WHERE sha256 = changed.sha256 AND text IS NOT NULL) THEN
                UPDATE web_rows SET search = receipt_web_document(words, zone_id, id)
                WHERE zone_id = changed.zone_id AND id = changed.record_id;
            END IF;
            RETURN NULL;
        END $$
        """,
        "CREATE TRIGGER record_blobs_search AFTER INSERT OR DELETE ON record_blobs FOR EACH ROW EXECUTE FUNCTION receipt_web_blob_search()",
        "CREATE TRIGGER blob_texts_search AFTER INSERT OR UPDATE OR DELETE ON blob_texts FOR EACH ROW EXECUTE FUNCTION receipt_web_blob_search()",
        // The documents of a database that had rows before version 4.
        "UPDATE web_rows SET search = receipt_web_document(words, zone_id, id)",
        "ALTER TABLE web_rows ALTER COLUMN search SET NOT NULL",
        "CREATE INDEX web_rows_search ON web_rows USING gin (search)",
    ]
}
