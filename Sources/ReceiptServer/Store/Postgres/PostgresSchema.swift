import PostgresNIO

/// The PostgreSQL schema, versioned: `receipt_schema` holds the version the database is at; each
/// migration runs once, in the transaction that records it. Processes starting together take an
/// advisory lock, so one migrates and the others then find the database current. A database at a
/// version newer than this build knows is refused, untouched.
enum PostgresSchema {
    /// Statements of each version, in order (version N is `migrations[N - 1]`).
    static let migrations: [[PostgresQuery]] = [
        [
            """
            CREATE TABLE accounts (
                id BIGSERIAL PRIMARY KEY,
                name TEXT NOT NULL UNIQUE,
                quota BIGINT CHECK (quota IS NULL OR quota >= 0),
                created_at BIGINT NOT NULL)
            """,
            """
            CREATE TABLE tokens (
                id BIGSERIAL PRIMARY KEY,
                account_id BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                label TEXT NOT NULL,
                token_hash TEXT NOT NULL UNIQUE CHECK (length(token_hash) = 64),
                created_at BIGINT NOT NULL,
                UNIQUE (account_id, label))
            """,
            """
            CREATE TABLE zones (
                id BIGSERIAL PRIMARY KEY,
                uid TEXT NOT NULL UNIQUE,
                owner_id BIGINT NOT NULL REFERENCES accounts(id),
                name TEXT NOT NULL,
                seq BIGINT NOT NULL DEFAULT 0,
                created_at BIGINT NOT NULL,
                UNIQUE (owner_id, name))
            """,
            """
            CREATE TABLE shares (
                zone_id BIGINT NOT NULL REFERENCES zones(id) ON DELETE CASCADE,
                account_id BIGINT NOT NULL REFERENCES accounts(id),
                role TEXT NOT NULL CHECK (role IN ('read', 'write')),
                PRIMARY KEY (zone_id, account_id))
            """,
            "CREATE INDEX shares_by_account ON shares(account_id)",
            """
            CREATE TABLE blobs (
                sha256 TEXT PRIMARY KEY CHECK (length(sha256) = 64),
                size BIGINT NOT NULL,
                created_at BIGINT NOT NULL,
                touched_at BIGINT NOT NULL)
            """,
            """
            CREATE TABLE records (
                zone_id BIGINT NOT NULL REFERENCES zones(id) ON DELETE CASCADE,
                id TEXT NOT NULL,
                change_tag TEXT NOT NULL,
                seq BIGINT NOT NULL,
                payload TEXT,
                PRIMARY KEY (zone_id, id))
            """,
            "CREATE INDEX records_by_seq ON records(zone_id, seq)",
            """
            CREATE TABLE record_blobs (
                zone_id BIGINT NOT NULL,
                record_id TEXT NOT NULL,
                sha256 TEXT NOT NULL REFERENCES blobs(sha256),
                PRIMARY KEY (zone_id, record_id, sha256),
                FOREIGN KEY (zone_id, record_id) REFERENCES records(zone_id, id) ON DELETE CASCADE)
            """,
            "CREATE INDEX record_blobs_by_blob ON record_blobs(sha256)",
            """
            CREATE TABLE possessions (
                account_id BIGINT NOT NULL REFERENCES accounts(id),
                sha256 TEXT NOT NULL REFERENCES blobs(sha256),
                PRIMARY KEY (account_id, sha256))
            """,
            "CREATE INDEX possessions_by_blob ON possessions(sha256)",
        ],
        // Version 2: the web view's passwords, sessions and list rows (PostgresServerStore+Web.swift).
        [
            """
            CREATE TABLE web_passwords (
                account_id BIGINT PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
                hash TEXT NOT NULL,
                changed_at BIGINT NOT NULL)
            """,
            """
            CREATE TABLE web_sessions (
                id_hash TEXT PRIMARY KEY CHECK (length(id_hash) = 64),
                account_id BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                csrf TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                expires_at BIGINT NOT NULL)
            """,
            "CREATE INDEX web_sessions_by_account ON web_sessions(account_id)",
            // One row per live record with what the list filters, sorts and sums by, kept by a
            // trigger on records (every write path keeps it current); gone with its record.
            """
            CREATE TABLE web_rows (
                zone_id BIGINT NOT NULL,
                id TEXT NOT NULL,
                date TEXT,
                created_at BIGINT NOT NULL,
                merchant TEXT,
                category TEXT,
                status TEXT,
                currency TEXT,
                total TEXT,
                -- The total as an exact number when it is one (then summed here, per currency).
                amount NUMERIC,
                words TEXT NOT NULL,
                PRIMARY KEY (zone_id, id),
                FOREIGN KEY (zone_id, id) REFERENCES records(zone_id, id) ON DELETE CASCADE)
            """,
            "CREATE INDEX web_rows_by_date ON web_rows(zone_id, date DESC NULLS LAST, created_at DESC, id)",
            "CREATE INDEX web_rows_by_amount ON web_rows(zone_id, currency) INCLUDE (amount, total, date, status, category, merchant)",
            """
            CREATE FUNCTION receipt_web_row() RETURNS trigger LANGUAGE plpgsql AS $$
            DECLARE j jsonb;
            BEGIN
                DELETE FROM web_rows WHERE zone_id = NEW.zone_id AND id = NEW.id;
                IF NEW.payload IS NOT NULL THEN
                    j := NEW.payload::jsonb;
                    INSERT INTO web_rows(zone_id, id, date, created_at, merchant, category, status, currency, total, amount, words)
                    VALUES (NEW.zone_id, NEW.id, j->>'date', coalesce((j->>'createdAt')::bigint, 0), lower(j->>'merchant'),
                            lower(j->>'category'), j->>'status', j->>'currency', j->>'total',
                            CASE WHEN j->>'total' ~ '^-?[0-9]+([.][0-9]+)?$' THEN (j->>'total')::numeric END,
                            lower(concat_ws(' ', j->>'merchant', j->>'category', j->>'note', j->>'total', j->>'claim', j->>'tags',
                                (SELECT string_agg(a->>'filename', ' ')
                                 FROM jsonb_array_elements(coalesce(j->'attachments', '[]'::jsonb)) a))));
                END IF;
                RETURN NULL;
            END $$
            """,
            "CREATE TRIGGER records_web_rows AFTER INSERT OR UPDATE ON records FOR EACH ROW EXECUTE FUNCTION receipt_web_row()",
            // The rows of a database that had records before version 2 (the trigger writes them).
            "UPDATE records SET payload = payload WHERE payload IS NOT NULL",
        ],
        // Version 3: the text members extracted from blobs (docs/PROTOCOL.md, "Extracted text").
        [
            """
            CREATE TABLE blob_texts (
                sha256 TEXT NOT NULL REFERENCES blobs(sha256) ON DELETE CASCADE,
                version TEXT NOT NULL,
                text TEXT,
                failure TEXT,
                uploaded_at BIGINT NOT NULL,
                PRIMARY KEY (sha256, version),
                CHECK ((text IS NULL) <> (failure IS NULL)))
            """,
        ],
        // Version 4: each account's text counter (the SQLite store's migration "server-v5-text-seq").
        [
            """
            CREATE TABLE text_seqs (
                account_id BIGINT PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
                seq BIGINT NOT NULL)
            """,
        ],
        // Version 5: the web list's word search (PostgresWebSearch.swift).
        PostgresWebSearch.migration,
        // Version 6: texts per zone owner, and the bytes of each zone's records (PostgresTextOwners.swift).
        PostgresTextOwners.migration,
        // Version 7: the web list's default order, newest added first (WebFilter.order).
        ["CREATE INDEX web_rows_by_added ON web_rows(zone_id, created_at DESC, id)"],
        // Version 8: the web view's review queue (PostgresServerStore+WebReview.swift).
        PostgresServerStore.webReviewMigration,
        // Version 9: record ids and blob addresses as bytes (PostgresByteKeys.swift).
        PostgresByteKeys.migration,
    ]

    static var currentVersion: Int { migrations.count }

    /// The SQL of one version's statements (tests build an old database with it).
    static func sql(ofVersion version: Int) -> [String] { migrations[version - 1].map(\.sql) }

    /// An arbitrary constant naming receipt's migration lock among the database's advisory locks.
    static let lockKey: Int64 = 0x7265_6365_6970_7401

    static func migrate(_ store: PostgresServerStore) async throws {
        try await store.transaction { db in
            try await db.run("SELECT pg_advisory_xact_lock(\(lockKey))")
            try await db.run("CREATE TABLE IF NOT EXISTS receipt_schema (version INTEGER NOT NULL)")
            let found = try await db.value("SELECT max(version) FROM receipt_schema", as: Int?.self) ?? nil
            let version = found ?? 0
            guard version <= currentVersion else {
                throw ServerError(.failed, "the PostgreSQL database \(store.url) has receipt schema version \(version), written by a newer "
                    + "receipt (this one knows up to version \(currentVersion)): upgrade receipt; nothing was changed")
            }
            guard version < currentVersion else { return }
            for (index, statements) in migrations.enumerated().dropFirst(version) {
                // What version 9 cannot convert is refused before its first change.
                if index + 1 == PostgresByteKeys.version { try await PostgresByteKeys.refuseUnconvertible(db, url: store.url) }
                for statement in statements { try await db.run(statement) }
            }
            try await db.run("DELETE FROM receipt_schema")
            try await db.run("INSERT INTO receipt_schema(version) VALUES (\(currentVersion))")
        }
    }
}
