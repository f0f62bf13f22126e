import GRDB
import ReceiptWire

/// The text members extracted from blobs, kept so that a household extracts (and OCRs) each blob
/// once: one row per blob and extractor version, `text` or (the extractor failed) `failure`.
extension ServerCatalog {
    static func registerTextMigrations(_ m: inout DatabaseMigrator) {
        m.registerMigration("server-v4-text") { db in
            try db.execute(sql: """
                CREATE TABLE blobTexts (
                    sha256 TEXT NOT NULL REFERENCES blobs(sha256) ON DELETE CASCADE,
                    version TEXT NOT NULL,
                    text TEXT,
                    failure TEXT,
                    uploadedAt INTEGER NOT NULL,
                    PRIMARY KEY (sha256, version),
                    CHECK ((text IS NULL) <> (failure IS NULL))
                ) WITHOUT ROWID;
                """)
        }
        // Per account, a counter that moves whenever a text the account can read is stored (or the
        // account is given a zone), so its vaults ask about their blobs' texts only after it moved
        // (docs/PROTOCOL.md, "Extracted text"). A row counter, bumped in the writing transaction:
        // never a clock, and on PostgreSQL commit-ordered (a reader sees the bump with the text).
        m.registerMigration("server-v5-text-seq") { db in
            try db.execute(sql: """
                CREATE TABLE textSeqs (
                    accountID INTEGER PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
                    seq INTEGER NOT NULL
                );
                """)
        }
    }

    /// Moves by one the text counter of every account that can read any of `blobs` (their zones'
    /// owners and participants).
    static func bumpTextReaders(_ db: Database, blobs: [String]) throws {
        guard !blobs.isEmpty else { return }
        let list = databaseQuestionMarks(count: blobs.count)
        try db.execute(sql: """
            INSERT INTO textSeqs(accountID, seq)
            SELECT id, 1 FROM (SELECT z.ownerID AS id FROM recordBlobs rb JOIN zones z ON z.id = rb.zoneID WHERE rb.sha256 IN (\(list))
                               UNION SELECT s.accountID FROM recordBlobs rb JOIN shares s ON s.zoneID = rb.zoneID WHERE rb.sha256 IN (\(list)))
            WHERE true
            ON CONFLICT(accountID) DO UPDATE SET seq = seq + 1
            """, arguments: StatementArguments(blobs + blobs))
    }

    static func bumpTextSeq(_ db: Database, account: Int64) throws {
        try db.execute(sql: "INSERT INTO textSeqs(accountID, seq) VALUES (?, 1) ON CONFLICT(accountID) DO UPDATE SET seq = seq + 1",
                       arguments: [account])
    }
}

extension ServerCatalog {
    /// Keeps each text for its blob and the extractor version when the caller can read a zone
    /// referencing the blob (else its address is returned, as refused). The first text of a (blob,
    /// version) stays: extractors of one version read the same bytes alike, and a later member cannot
    /// replace what others pulled.
    public func putTexts(_ texts: [WireText], version: String, caller: Account) async throws -> [String] {
        try await pool.write { db in
            var refused: [String] = []
            var stored: [String] = []
            let now = Self.now()
            for text in texts {
                guard let sha256 = text.sha256, try Self.canRead(db, blob: sha256, caller: caller) else {
                    refused.append(text.sha256 ?? "")
                    continue
                }
                try db.cachedStatement(sql: """
                    INSERT INTO blobTexts(sha256, version, text, failure, uploadedAt) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT(sha256, version) DO NOTHING
                    """).execute(arguments: [sha256, version, text.text, text.failed, now])
                if db.changesCount > 0 { stored.append(sha256) }
            }
            try Self.bumpTextReaders(db, blobs: stored)
            return refused
        }
    }

    /// The caller's text counter (0 before any text it can read was stored).
    public func textSequence(caller: Account) async throws -> Int64 {
        try await pool.read { db in
            try Int64.fetchOne(db, sql: "SELECT seq FROM textSeqs WHERE accountID = ?", arguments: [caller.id]) ?? 0
        }
    }

    /// Of `blobs`, those the caller can read and the server has no text of for `version`.
    public func textWant(_ blobs: [String], version: String, caller: Account) async throws -> [String] {
        try await pool.read { db in
            try blobs.filter { blob in
                try Self.canRead(db, blob: blob, caller: caller) && !(Bool.fetchOne(db.cachedStatement(sql: """
                    SELECT EXISTS (SELECT 1 FROM blobTexts WHERE sha256 = ? AND version = ?)
                    """), arguments: [blob, version]) ?? false)
            }
        }
    }

    /// The texts of `blobs` for `version` that the caller can read, in order, stopping after about
    /// `byteLimit` bytes (`more`).
    public func texts(_ blobs: [String], version: String, caller: Account, byteLimit: Int) async throws -> WireTextFetchResponse {
        try await pool.read { db in
            var answer = WireTextFetchResponse(texts: [], more: false)
            var bytes = 0
            // The text first: most blobs asked for have none yet, and its key lookup is cheaper than
            // the authorization join, which then runs only for a text there is to hand out.
            for blob in blobs {
                let lookup = try db.cachedStatement(sql: "SELECT text, failure FROM blobTexts WHERE sha256 = ? AND version = ?")
                guard let row = try Row.fetchOne(lookup, arguments: [blob, version]),
                      try Self.canRead(db, blob: blob, caller: caller) else { continue }
                let text = WireText(sha256: blob, text: row["text"], failed: row["failure"])
                bytes += (text.text?.utf8.count ?? 0) + (text.failed?.utf8.count ?? 0)
                if bytes > byteLimit && !answer.texts.isEmpty {
                    answer.more = true
                    break
                }
                answer.texts.append(text)
            }
            return answer
        }
    }
}
