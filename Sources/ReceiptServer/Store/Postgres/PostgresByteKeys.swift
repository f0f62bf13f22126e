import BlobStore
import Foundation
import PostgresNIO

/// Schema version 9: every record id is a `uuid` (its 16 bytes) and every blob address a `bytea` of
/// its 32, in every table and index holding one, as the embedded catalog's migration
/// "server-keys-as-bytes" (ServerCatalog+ByteKeys.swift, which says why). PostgreSQL changes a
/// column's type in place (`ALTER … TYPE … USING`, each table rewritten with its indexes); the
/// foreign keys between the converted columns are dropped first and made again after, and the
/// search document's function, which takes a record id, is made again for a `uuid`. All of it in
/// the one transaction that records the version, after `refuseUnconvertible` found nothing.
enum PostgresByteKeys {
    static let version = 9

    static let migration: [PostgresQuery] = [
        """
        DO $$ DECLARE c record; BEGIN
            FOR c IN SELECT conrelid::regclass AS tab, conname FROM pg_constraint
                     WHERE contype = 'f' AND confrelid IN ('records'::regclass, 'blobs'::regclass) LOOP
                EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', c.tab, c.conname);
            END LOOP;
        END $$
        """,
        "ALTER TABLE blobs DROP CONSTRAINT blobs_sha256_check",
        "ALTER TABLE records ALTER COLUMN id TYPE uuid USING id::uuid",
        "ALTER TABLE web_rows ALTER COLUMN id TYPE uuid USING id::uuid",
        """
        ALTER TABLE record_blobs ALTER COLUMN record_id TYPE uuid USING record_id::uuid,
            ALTER COLUMN sha256 TYPE bytea USING decode(sha256, 'hex')
        """,
        "ALTER TABLE blobs ALTER COLUMN sha256 TYPE bytea USING decode(sha256, 'hex'), ADD CHECK (octet_length(sha256) = 32)",
        "ALTER TABLE possessions ALTER COLUMN sha256 TYPE bytea USING decode(sha256, 'hex')",
        "ALTER TABLE blob_texts ALTER COLUMN sha256 TYPE bytea USING decode(sha256, 'hex')",
        "ALTER TABLE blob_texts_unowned ALTER COLUMN sha256 TYPE bytea USING decode(sha256, 'hex')",
        """
        ALTER TABLE record_blobs ADD FOREIGN KEY (zone_id, record_id) REFERENCES records(zone_id, id) ON DELETE CASCADE,
            ADD FOREIGN KEY (sha256) REFERENCES blobs(sha256)
        """,
        "ALTER TABLE web_rows ADD FOREIGN KEY (zone_id, id) REFERENCES records(zone_id, id) ON DELETE CASCADE",
        "ALTER TABLE possessions ADD FOREIGN KEY (sha256) REFERENCES blobs(sha256)",
        "ALTER TABLE blob_texts ADD FOREIGN KEY (sha256) REFERENCES blobs(sha256) ON DELETE CASCADE",
        "ALTER TABLE blob_texts_unowned ADD FOREIGN KEY (sha256) REFERENCES blobs(sha256) ON DELETE CASCADE",
        // Version 6's document, its record a uuid (the triggers call it by name, with NEW.id).
        "DROP FUNCTION receipt_web_document(text, bigint, text)",
        """
        CREATE FUNCTION receipt_web_document(words text, zone bigint, record uuid) RETURNS tsvector LANGUAGE sql STABLE AS $$
            SELECT to_tsvector('simple', left(receipt_web_fold(words || ' ' || coalesce(
                (SELECT string_agg(t.text, ' ') FROM record_blobs rb JOIN zones z ON z.id = rb.zone_id
                 JOIN blob_texts t ON t.owner_id = z.owner_id AND t.sha256 = rb.sha256
                 WHERE rb.zone_id = zone AND rb.record_id = record AND t.text IS NOT NULL), '')), 250000))
        $$
        """,
    ]

    /// Refuses, before the first change, a database holding a record id that is no UUID, two ids of
    /// one zone differing only in case, or an address that is not 64 lowercase hex digits: one line
    /// naming the table and the value (the migration's transaction is rolled back: nothing changed).
    static func refuseUnconvertible(_ db: PostgresConnection, url: PostgresURL) async throws {
        func refuse(_ table: String, _ what: String) -> ServerError {
            ServerError(.failed, "the PostgreSQL database \(url) holds in table \(table) \(what), which schema version \(version) "
                + "cannot convert: nothing was changed")
        }
        func shown(_ value: String) -> String { value.count > 80 ? value.prefix(77) + "..." : value }
        let uuid = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
        for (table, column) in [("records", "id"), ("record_blobs", "record_id"), ("web_rows", "id")] {
            if let bad = try await db.value(PostgresQuery(unsafeSQL: "SELECT quote_literal(\(column)) FROM \(table) WHERE \(column) !~ '\(uuid)' LIMIT 1"),
                                            as: String.self) {
                throw refuse(table, "the record id \(shown(bad)), no UUID,")
            }
        }
        if let twins = try await db.rows("""
            SELECT min(id), max(id) FROM records GROUP BY zone_id, lower(id) HAVING count(*) > 1 LIMIT 1
            """).first {
            let (a, b) = try twins.decode((String, String).self)
            throw refuse("records", "the record ids '\(a)' and '\(b)' in one zone, one id in two cases,")
        }
        for table in ["blobs", "record_blobs", "possessions", "blob_texts", "blob_texts_unowned"] {
            if let bad = try await db.value(PostgresQuery(unsafeSQL: "SELECT quote_literal(sha256) FROM \(table) WHERE sha256 !~ '^[0-9a-f]{64}$' LIMIT 1"),
                                            as: String.self) {
                throw refuse(table, "the blob address \(shown(bad)), not 64 lowercase hex digits,")
            }
        }
    }
}

/// Record ids and blob addresses as the PostgreSQL store binds and reads them since version 9 (the
/// embedded catalog's `StoredKey`): the rules hand over the wire's text.
enum PostgresKey {
    /// A record id's uuid; nil (SQL NULL, which equals nothing) for a text that is no id as the
    /// server writes one (`ServerKey`).
    static func record(_ id: String) -> UUID? { ServerKey.record(id)?.uuid }

    /// A blob address's 32 bytes; for a text that is no address, no bytes (which no stored address
    /// equals, and which the column's CHECK refuses).
    static func blob(_ sha256: String) -> Data { ServerKey.blob(sha256)?.withBytes { Data($0) } ?? Data() }

    static func recordID(_ uuid: UUID) -> String { ReceiptID(uuid).text }

    /// An address's bytes as 64 lowercase hex digits (a damaged value's as its own digits).
    static func address(_ bytes: Data) -> String {
        bytes.withUnsafeBytes(BlobID.hexText)
    }
}
