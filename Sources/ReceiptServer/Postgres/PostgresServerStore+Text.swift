import PostgresNIO
import ReceiptWire

/// Extracted text in PostgreSQL (the rules of ServerCatalog+Text.swift).
extension PostgresServerStore {
    public func putTexts(_ texts: [WireText], version: String, caller: Account) async throws -> [String] {
        let now = Self.now()
        return try await transaction { db in
            var refused: [String] = []
            var stored: [String] = []
            // In address order: two uploads of the same texts at once take the rows' locks in one order.
            for text in texts.sorted(by: { ($0.sha256 ?? "") < ($1.sha256 ?? "") }) {
                guard let sha256 = text.sha256, try await Self.canRead(db, blob: sha256, caller: caller) else {
                    refused.append(text.sha256 ?? "")
                    continue
                }
                let kept = try await db.run("""
                    INSERT INTO blob_texts(sha256, version, text, failure, uploaded_at)
                    VALUES (\(sha256), \(version), \(text.text), \(text.failed), \(now))
                    ON CONFLICT (sha256, version) DO NOTHING RETURNING sha256
                    """)
                if kept > 0 { stored.append(sha256) }
            }
            guard !stored.isEmpty else { return refused }
            // The readers' counters, once each, in the same transaction (see ServerCatalog.bumpTextReaders);
            // rows locked in account order, so two uploads at once never wait on each other in a cycle.
            try await db.run("""
                INSERT INTO text_seqs(account_id, seq)
                SELECT id, 1 FROM (SELECT z.owner_id AS id FROM record_blobs rb JOIN zones z ON z.id = rb.zone_id
                                   WHERE rb.sha256 = ANY(\(stored))
                                   UNION SELECT s.account_id FROM record_blobs rb JOIN shares s ON s.zone_id = rb.zone_id
                                   WHERE rb.sha256 = ANY(\(stored))) readers
                ORDER BY id
                ON CONFLICT (account_id) DO UPDATE SET seq = text_seqs.seq + 1
                """)
            return refused
        }
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
            for blob in blobs where try await Self.canRead(db, blob: blob, caller: caller) {
                let has = try await db.value("""
                    SELECT EXISTS (SELECT 1 FROM blob_texts WHERE sha256 = \(blob) AND version = \(version))
                    """, as: Bool.self) ?? false
                if !has { want.append(blob) }
            }
            return want
        }
    }

    public func texts(_ blobs: [String], version: String, caller: Account, byteLimit: Int) async throws -> WireTextFetchResponse {
        try await transaction { db in
            var answer = WireTextFetchResponse(texts: [], more: false)
            var bytes = 0
            // The text first (see ServerCatalog.texts): the authorization query only for a text there is.
            for blob in blobs {
                guard let row = try await db.rows("""
                    SELECT text, failure FROM blob_texts WHERE sha256 = \(blob) AND version = \(version)
                    """).first,
                      try await Self.canRead(db, blob: blob, caller: caller) else { continue }
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
