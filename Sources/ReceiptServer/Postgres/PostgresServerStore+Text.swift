import PostgresNIO
import ReceiptWire

/// Extracted text in PostgreSQL (the rules of ServerCatalog+Text.swift).
extension PostgresServerStore {
    public func putText(_ sha256: String, version: String, _ text: WireText, caller: Account) async throws {
        let now = Self.now()
        try await transaction { db in
            guard try await Self.canRead(db, blob: sha256, caller: caller) else { throw ServerError.notFound("blob \(sha256)") }
            try await db.run("""
                INSERT INTO blob_texts(sha256, version, text, failure, uploaded_at)
                VALUES (\(sha256), \(version), \(text.text), \(text.failed), \(now))
                ON CONFLICT (sha256, version) DO NOTHING
                """)
        }
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
