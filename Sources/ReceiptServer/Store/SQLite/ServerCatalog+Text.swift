import GRDB
import ReceiptWire

/// The text members extracted from blobs, kept so that a household extracts (and OCRs) each blob
/// once: one row per zone owner, blob and extractor version, `text` or (the extractor failed)
/// `failure` (per owner since "server-texts-per-owner", ServerCatalog+TextOwners.swift: a text one
/// household stored is never another's).
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

    static func bumpTextSeq(_ db: Database, account: Int64) throws {
        try db.execute(sql: "INSERT INTO textSeqs(accountID, seq) VALUES (?, 1) ON CONFLICT(accountID) DO UPDATE SET seq = seq + 1",
                       arguments: [account])
    }
}

extension ServerCatalog {
    /// The owners of the zones the caller can read whose records reference the blob: those a text of
    /// it from the caller is kept for (docs/PROTOCOL.md, "Extracted text"); none when it cannot read it.
    static func textOwners(_ db: Database, blob: String, caller: Account) throws -> [Int64] {
        try Int64.fetchAll(db.cachedStatement(sql: """
            SELECT DISTINCT z.ownerID FROM recordBlobs rb JOIN zones z ON z.id = rb.zoneID
            WHERE rb.sha256 = ?1 AND (z.ownerID = ?2 OR EXISTS (SELECT 1 FROM shares s WHERE s.zoneID = z.id AND s.accountID = ?2))
            ORDER BY z.ownerID
            """), arguments: [blob, caller.id])
    }

    /// Keeps each text for every owner of a zone the caller can read that references its blob, unless
    /// that owner has a text of the blob and version already (the first stays: a later member cannot
    /// replace what the others pulled). A text of a blob the caller cannot read is refused (its
    /// address returned); one that would take an owner past its quota refuses the whole upload (over quota).
    public func putTexts(_ texts: [WireText], version: String, caller: Account) async throws -> [String] {
        try await pool.write { db in
            var refused: [String] = []
            var kept: [(text: WireText, owners: [Int64])] = []
            for text in texts {
                let owners = try text.sha256.map { try Self.textOwners(db, blob: $0, caller: caller) } ?? []
                if owners.isEmpty { refused.append(text.sha256 ?? "") } else { kept.append((text, owners)) }
            }
            let now = ServerRules.now()
            try Self.withinQuota(db, accountIDs: kept.flatMap(\.owners)) {
                var stored: [(owner: Int64, blob: String)] = []
                for (text, owners) in kept {
                    for owner in owners {
                        try db.cachedStatement(sql: """
                            INSERT INTO blobTexts(ownerID, sha256, version, bytes, text, failure, uploadedAt) VALUES (?, ?, ?, ?, ?, ?, ?)
                            ON CONFLICT(ownerID, sha256, version) DO NOTHING
                            """).execute(arguments: [owner, text.sha256, version, StorageUse.textBytes(text: text.text, failure: text.failed),
                                                     text.text, text.failed, now])
                        if db.changesCount > 0 { stored.append((owner, text.sha256 ?? "")) }
                    }
                }
                try Self.bumpTextReaders(db, of: stored)
            }
            return refused
        }
    }

    /// Moves by one the text counter of every account that can read any of the owners' new texts:
    /// the owner, and the participants of its zones referencing the blob.
    static func bumpTextReaders(_ db: Database, of stored: [(owner: Int64, blob: String)]) throws {
        var readers = Set(stored.map(\.owner))
        for (owner, blob) in stored {
            readers.formUnion(try Int64.fetchAll(db.cachedStatement(sql: """
                SELECT s.accountID FROM recordBlobs rb JOIN zones z ON z.id = rb.zoneID JOIN shares s ON s.zoneID = z.id
                WHERE rb.sha256 = ? AND z.ownerID = ?
                """), arguments: [blob, owner]))
        }
        for reader in readers.sorted() { try bumpTextSeq(db, account: reader) }
    }

    /// The caller's text counter (0 before any text it can read was stored).
    public func textSequence(caller: Account) async throws -> Int64 {
        try await pool.read { db in
            try Int64.fetchOne(db, sql: "SELECT seq FROM textSeqs WHERE accountID = ?", arguments: [caller.id]) ?? 0
        }
    }

    /// Of `blobs`, those the caller can read for which an owner it reads them through has no text of
    /// `version`.
    public func textWant(_ blobs: [String], version: String, caller: Account) async throws -> [String] {
        try await pool.read { db in
            try blobs.filter { blob in
                return try Self.textOwners(db, blob: blob, caller: caller).contains { owner in
                    !(try Bool.fetchOne(db.cachedStatement(sql: """
                        SELECT EXISTS (SELECT 1 FROM blobTexts WHERE ownerID = ? AND sha256 = ? AND version = ?)
                        """), arguments: [owner, blob, version]) ?? false)
                }
            }
        }
    }

    /// The texts of `blobs` for `version` that the caller can read, in order, stopping after about
    /// `byteLimit` bytes (`more`). A blob the caller reads through several owners' zones gets its own
    /// text first, else the text of the owner with the smallest id.
    public func texts(_ blobs: [String], version: String, caller: Account, byteLimit: Int) async throws -> WireTextFetchResponse {
        try await pool.read { db in
            var answer = WireTextFetchResponse(texts: [], more: false)
            var bytes = 0
            // The texts of the blob first (most blobs asked for have none yet), then, for those, the
            // authorization: a zone of the text's owner referencing the blob that the caller can read.
            let lookup = try db.cachedStatement(sql: """
                SELECT t.text, t.failure FROM blobTexts t
                WHERE t.sha256 = ?1 AND t.version = ?2 AND EXISTS (
                    SELECT 1 FROM recordBlobs rb JOIN zones z ON z.id = rb.zoneID
                    WHERE rb.sha256 = t.sha256 AND z.ownerID = t.ownerID
                    AND (z.ownerID = ?3 OR EXISTS (SELECT 1 FROM shares s WHERE s.zoneID = z.id AND s.accountID = ?3)))
                ORDER BY t.ownerID <> ?3, t.ownerID LIMIT 1
                """)
            for blob in blobs {
                guard let row = try Row.fetchOne(lookup, arguments: [blob, version, caller.id]) else { continue }
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
