import Foundation
import ReceiptCatalog
import ReceiptText
import ReceiptWire

extension SyncClient {
    public func putText(_ sha256: String, version: String, _ text: WireText) async throws {
        try await send(.PUT, "/v1/text/\(sha256)/\(Self.escape(version))", body: text)
    }

    public func textWant(_ blobs: [String], version: String) async throws -> [String] {
        try await call(.POST, "/v1/text/want", body: WireTextRequest(version: version, blobs: blobs), as: WireWantResponse.self).want
    }

    public func texts(_ blobs: [String], version: String) async throws -> WireTextFetchResponse {
        try await call(.POST, "/v1/text/fetch", body: WireTextRequest(version: version, blobs: blobs), as: WireTextFetchResponse.self)
    }
}

/// Extracted text through sync (docs/PROTOCOL.md, "Extracted text"): a member that extracted the
/// text of a blob offers it to the server after its push; a member that lacks the text of a blob
/// takes it from the server, stored exactly as if its own extractor had read it, so `receipt index`
/// finds nothing left to do for it (no second OCR in a household).
extension SyncEngine {
    /// Settings key: the `extractedAt` (ms) up to which this vault's texts were offered to the server.
    static let textOfferedKey = "sync.textOffered"
    static let textBatch = 256

    /// Offers the texts of the current extractor version stored since the last offer; uploads those
    /// the server wants (it wants a text it lacks, of a blob the account can read). A text whose blob
    /// the server did not hold yet is not offered again: its members extract it themselves.
    func uploadTexts() async throws {
        let version = TextExtractor.version
        var mark = try vault.catalogRead { db in
            try Catalog.setting(db, Self.textOfferedKey).flatMap { Int64($0) } ?? -1
        }
        var after = ""
        while true {
            try checkNotWiping()
            let batch = try vault.catalogRead { db in
                try Catalog.textsStored(db, version: version, after: mark, after, limit: Self.textBatch)
            }
            guard let last = batch.last else { break }
            let wanted = try await client.textWant(batch.map(\.0), version: version)
            for sha256 in wanted {
                guard let stored = try vault.catalogRead({ try Catalog.storedText($0, sha256, version: version) }) else { continue }
                let text: WireText = stored.text == nil
                    ? WireText(text: nil, failed: String((stored.error ?? "the extractor failed").prefix(1000)))
                    : WireText(text: stored.text, failed: nil)
                // A text over the server's limit stays with this vault (its members extract it themselves).
                if (text.text?.utf8.count ?? 0) > WireText.maxBytes || text.validationError != nil { continue }
                do {
                    try await client.putText(sha256, version: version, text)
                    report.textsUploaded += 1
                } catch let error as SyncError where [400, 404, 413].contains(error.status ?? 0) {
                    // This text only (refused, or its blob left the account's zones meanwhile): it stays
                    // with this vault, and the sync goes on.
                    continue
                }
            }
            (mark, after) = (last.1, last.0)
            try vault.catalogTransaction { w in try w.setSetting(Self.textOfferedKey, String(last.1)) }
            // The next batch starts after this one (rows of the same millisecond continue by address).
        }
    }

    /// Takes from the server the texts of blobs whose text this vault still lacks for the current
    /// extractor version, and stores them as if extracted here. What the server lacks stays pending.
    func pullTexts() async throws {
        let version = TextExtractor.version
        var after = ""
        while true {
            try checkNotWiping()
            let pending = try vault.catalogRead { db in
                try Catalog.pendingText(db, version: version, after: after, limit: Self.textBatch).map(\.sha256)
            }
            guard let last = pending.last else { break }
            var rest = pending[...]
            while !rest.isEmpty {
                let answer = try await client.texts(Array(rest), version: version)
                let texts = answer.texts.filter { $0.sha256.map(pending.contains) ?? false && $0.validationError == nil }
                if !texts.isEmpty {
                    try vault.catalogTransaction { w in
                        for text in texts {
                            guard let sha256 = text.sha256 else { continue }
                            try Catalog.storeText(w.db, sha256: sha256, version: version, text: text.text, error: text.failed)
                        }
                    }
                    report.textsDownloaded += texts.count
                }
                guard answer.more, let answered = answer.texts.last?.sha256, let index = rest.firstIndex(of: answered) else { break }
                rest = rest[(index + 1)...]
            }
            after = last
        }
    }
}
