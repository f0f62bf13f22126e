import PostgresNIO
import ReceiptWire

/// Extracted text in PostgreSQL (texts per zone owner, as in the SQLite store).
extension PostgresServerStore {
    static func textOwners(_ db: PostgresConnection, blob: String, caller: Account) async throws -> [Int64] {
        try await db.rows("""
            SELECT DISTINCT z.owner_id FROM record_blobs rb JOIN zones z ON z.id = rb.zone_id
            WHERE rb.sha256 = \(blob) AND (z.owner_id = \(caller.id)
                  OR EXISTS (SELECT 1 FROM shares s WHERE s.zone_id = z.id AND s.account_id = \(caller.id)))
            ORDER BY z.owner_id
            """).map { try $0.decode(Int64.self) }
    }

    public func putTexts(_ texts: [WireText], version: String, caller: Account) async throws -> [String] {
        let now = ServerRules.now()
        return try await transaction { db in
            var refused: [String] = []
            var kept: [(text: WireText, owners: [Int64])] = []
            for text in texts {
                var owners: [Int64] = []
                if let blob = text.sha256 { owners = try await Self.textOwners(db, blob: blob, caller: caller) }
                if owners.isEmpty { refused.append(text.sha256 ?? "") } else { kept.append((text, owners)) }
            }
            // The owners' rows are locked first, in id order (withinQuota), then the texts written in
            // address order: two uploads at once wait for each other instead of deadlocking.
            try await Self.withinQuota(db, accountIDs: kept.flatMap(\.owners)) {
                var stored: [(owner: Int64, blob: String)] = []
                for (text, owners) in kept.sorted(by: { ($0.text.sha256 ?? "") < ($1.text.sha256 ?? "") }) {
                    let bytes = StorageUse.textBytes(text: text.text, failure: text.failed)
                    for owner in owners {
                        let inserted = try await db.run("""
                            INSERT INTO blob_texts(owner_id, sha256, version, bytes, text, failure, uploaded_at)
                            VALUES (\(owner), \(text.sha256), \(version), \(bytes), \(text.text), \(text.failed), \(now))
                            ON CONFLICT (owner_id, sha256, version) DO NOTHING RETURNING 1
                            """)
                        if inserted > 0 { stored.append((owner, text.sha256 ?? "")) }
                    }
                }
                try await Self.bumpTextReaders(db, of: stored)
            }
            return refused
        }
    }

    /// The counters of the owners of new texts and of the participants of their zones referencing
    /// the blob, once each, in account order (as the SQLite store does).
    static func bumpTextReaders(_ db: PostgresConnection, of stored: [(owner: Int64, blob: String)]) async throws {
        var readers = Set(stored.map(\.owner))
        for (owner, blob) in stored {
            readers.formUnion(try await db.rows("""
                SELECT s.account_id FROM record_blobs rb JOIN zones z ON z.id = rb.zone_id JOIN shares s ON s.zone_id = z.id
                WHERE rb.sha256 = \(blob) AND z.owner_id = \(owner)
                """).map { try $0.decode(Int64.self) })
        }
        for reader in readers.sorted() { try await bumpTextSeq(db, account: reader) }
    }

    public func textSequence(caller: Account) async throws -> Int64 {
        try await transaction { db in
            try await db.value("SELECT seq FROM text_seqs WHERE account_id = \(caller.id)", as: Int64.self) ?? 0
        }
    }

    static func bumpTextSeq(_ db: PostgresConnection, account: Int64) async throws {
        try await db.run("""
            INSERT INTO text_seqs(account_id, seq) VALUES (\(account), 1)
            ON CONFLICT (account_id) DO UPDATE SET seq = text_seqs.seq + 1
            """)
    }

    public func textWant(_ blobs: [String], version: String, caller: Account) async throws -> [String] {
        try await transaction { db in
            var want: [String] = []
            for blob in blobs {
                for owner in try await Self.textOwners(db, blob: blob, caller: caller) {
                    let has = try await db.value("""
                        SELECT EXISTS (SELECT 1 FROM blob_texts WHERE owner_id = \(owner) AND sha256 = \(blob) AND version = \(version))
                        """, as: Bool.self) ?? false
                    if !has {
                        want.append(blob)
                        break
                    }
                }
            }
            return want
        }
    }

    public func texts(_ blobs: [String], version: String, caller: Account, byteLimit: Int) async throws -> WireTextFetchResponse {
        try await transaction { db in
            var answer = WireTextFetchResponse(texts: [], more: false)
            var bytes = 0
            // As the SQLite store: the caller's own text first, else the smallest owner's it reads.
            for blob in blobs {
                guard let row = try await db.rows("""
                    SELECT t.text, t.failure FROM blob_texts t
                    WHERE t.sha256 = \(blob) AND t.version = \(version) AND EXISTS (
                        SELECT 1 FROM record_blobs rb JOIN zones z ON z.id = rb.zone_id
                        WHERE rb.sha256 = t.sha256 AND z.owner_id = t.owner_id
                        AND (z.owner_id = \(caller.id) OR EXISTS (SELECT 1 FROM shares s WHERE s.zone_id = z.id AND s.account_id = \(caller.id))))
                    ORDER BY t.owner_id <> \(caller.id), t.owner_id LIMIT 1
                    """).first else { continue }
                let (text, failure) = try row.decode((String?, String?).self)
                let entry = WireText(sha256: blob, text: text, failed: failure)
                bytes += (text?.utf8.count ?? 0) + (failure?.utf8.count ?? 0)
                if bytes > byteLimit && !answer.texts.isEmpty {
                    answer.more = true
                    break
                }
                answer.texts.append(entry)
            }
            return answer
        }
    }
}
