import BlobStore
import Foundation
import GRDB
import ReceiptCatalog
import ReceiptText
import ReceiptWire

extension SyncClient {
    public func putText(_ sha256: String, version: String, _ text: WireText) async throws {
        try await send(.PUT, "/v1/text/\(sha256)/\(Self.escape(version))", body: text)
    }

    /// Uploads texts (each with its `sha256`) in one request; returns the addresses the server refused.
    public func putTexts(_ texts: [WireText], version: String) async throws -> [String] {
        try await call(.POST, "/v1/text/put", body: WireTextPut(version: version, texts: texts), as: WireTextPutResponse.self).refused
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
    /// Settings key: the (`extractedAt` in ms, address) up to which this vault's texts were offered
    /// to the server, as `MS SHA256` (a mark of before 2026-11-26 has no address: that millisecond
    /// is offered once more).
    static let textOfferedKey = "sync.textOffered"
    /// Settings key: what the last ask for texts covered (`TextAsk`).
    static let textAskedKey = "sync.textAsked"
    static let textBatch = 256

    /// Offers the texts of the current extractor version stored since the last offer, and again those
    /// of blobs whose receipts the server took for the first time in this sync's push (offered before,
    /// the server could not take them: it did not hold the blob for this account yet). Uploads those
    /// the server wants (it wants a text it lacks, of a blob the account can read).
    func uploadTexts() async throws {
        let version = TextExtractor.version
        let stored = try vault.catalogRead { db in
            try Catalog.setting(db, Self.textOfferedKey)?.split(separator: " ").map(String.init) ?? []
        }
        let offered = stored.first.flatMap { Int64($0) } ?? -1
        // Too many first pushes to remember one by one: every text is offered again instead.
        var (mark, after): (Millis, BlobID?) = firstPushed.overflow ? (-1, nil) : (offered, stored.count > 1 ? BlobID(hex: stored[1]) : nil)
        while true {
            try checkNotWiping()
            let batch = try vault.catalogRead { db in
                try Catalog.textsStored(db, version: version, after: mark, after, limit: Self.textBatch)
            }
            guard let last = batch.last else { break }
            try await offer(batch.map { $0.sha256.hex }, version: version)
            (mark, after) = (last.1, last.0)
            try vault.catalogTransaction { w in try w.setSetting(Self.textOfferedKey, "\(last.1) \(last.0.hex)") }
            // The next batch, and the next sync, start after this one (rows of the same millisecond
            // continue by address).
        }
        // No text at all was stored: from now on, texts taken from this server (stored at 0) are not
        // offered back to it. Pointed at another server, the mark is removed and they are offered.
        if mark < 0 {
            let end = "0 " + String(repeating: "f", count: 64) // after every address of that millisecond
            try vault.catalogTransaction { w in try w.setSetting(Self.textOfferedKey, end) }
        }
        guard !firstPushed.overflow else { return }
        for chunk in firstPushed.sorted(Self.textBatch) {
            try checkNotWiping()
            // Texts stored after the old mark were offered by the loop above.
            let again = try vault.catalogRead { db in
                try Catalog.textsStored(db, version: version, among: chunk.compactMap(BlobID.init(hex:)), upTo: offered)
            }
            if !again.isEmpty { try await offer(again.map(\.hex), version: version) }
        }
    }

    /// Asks `want` about `blobs` (that have a stored text) and uploads the texts the server wants: in
    /// uploads of many (`POST /v1/text/put`) where the server takes them, else one `PUT` each.
    private func offer(_ blobs: [String], version: String) async throws {
        let wanted = try await client.textWant(blobs, version: version)
        // Read one at a time and sent by the upload: memory holds one upload (1 MiB of text), not 256 texts.
        var batch: [WireText] = []
        var bytes = 0
        func flush() async throws {
            guard !batch.isEmpty else { return }
            defer { (batch, bytes) = ([], 0) }
            do {
                let refused = try await client.putTexts(batch, version: version)
                report.textsUploaded += batch.count - refused.count
            } catch let error as SyncError where error.status == 413 {
                // Too large for the server or a proxy in front of it (a text alone may be larger than
                // an upload of many): one at a time, as before revision 5.
                for text in batch { try await putText(text, version: version) }
            }
        }
        for sha256 in wanted {
            guard let blob = BlobID(hex: sha256),
                  let stored = try vault.catalogRead({ try Catalog.storedText($0, blob, version: version) }) else { continue }
            let text: WireText = stored.text == nil
                ? WireText(sha256: sha256, text: nil, failed: String((stored.error ?? "the extractor failed").prefix(1000)))
                : WireText(sha256: sha256, text: stored.text, failed: nil)
            // A text over the server's limit stays with this vault (its members extract it themselves).
            if (text.text?.utf8.count ?? 0) > WireText.maxBytes || text.validationError != nil { continue }
            guard serverTakesTextBatches else {
                try await putText(text, version: version)
                continue
            }
            let weight = WireTextPut.weight(text)
            if batch.count == WireTextPut.maxTexts || bytes + weight > WireTextPut.maxBatchBytes { try await flush() }
            batch.append(text)
            bytes += weight
        }
        try await flush()
    }

    /// One text by `PUT /v1/text/{sha256}/{version}`; a text the server refuses stays with this vault.
    private func putText(_ text: WireText, version: String) async throws {
        do {
            try await client.putText(text.sha256 ?? "", version: version, WireText(text: text.text, failed: text.failed))
            report.textsUploaded += 1
        } catch let error as SyncError where [400, 404, 413].contains(error.status ?? 0) {
            // This text only (refused, or its blob left the account's zones meanwhile): it stays with
            // this vault, and the sync goes on.
        }
    }

    /// Takes from the server the texts of blobs whose text this vault still lacks for the current
    /// extractor version, and stores them as if extracted here. What the server lacks stays pending.
    ///
    /// Every pending blob is asked about only when the account's text counter (`textSeq` of
    /// `GET /v1/account`, read before anything was asked) moved since the last ask; otherwise only the
    /// pending blobs that came into the vault since (imported or pulled) and those of receipts the
    /// server took for the first time in this sync (it may not have let this account read them before).
    func pullTexts() async throws {
        let version = TextExtractor.version
        let (last, top, sameRows) = try vault.catalogRead { db -> (TextAsk?, (row: Int64, sha256: BlobID)?, Bool) in
            let last = try Catalog.setting(db, Self.textAskedKey).flatMap(TextAsk.init)
            // The blob row marked last time is still there: rows inserted since have greater rowids.
            var same = false
            if let last { same = try last.row == 0 || Catalog.blobAddress(db, row: last.row)?.hex == last.sha256 }
            return (last, try Catalog.topBlob(db), same)
        }
        if let last, let seq = textSeq, last.version == version, last.seq == seq, sameRows, !firstPushed.overflow {
            try await askTexts(version, from: last.row) { db, row in
                let added = try Catalog.pendingTextAdded(db, version: version, afterRow: row, limit: Self.textBatch)
                return (added.map { $0.sha256.hex }, added.last?.row ?? row)
            }
            for chunk in firstPushed.sorted(Self.textBatch) {
                try await askTexts(version, from: BlobID?.none) { db, after in
                    let pending = try Catalog.pendingText(db, version: version, after: after, among: chunk.compactMap(BlobID.init(hex:)),
                                                          addedUpTo: last.row, limit: Self.textBatch).map(\.sha256)
                    return (pending.map(\.hex), pending.last ?? after)
                }
            }
        } else {
            try await askTexts(version, from: BlobID?.none) { db, after in
                let pending = try Catalog.pendingText(db, version: version, after: after, limit: Self.textBatch).map(\.sha256)
                return (pending.map(\.hex), pending.last ?? after)
            }
        }
        // A server before revision 4 has no counter: every sync asks about every pending blob.
        guard let seq = textSeq else { return }
        let ask = TextAsk(version: version, seq: seq, row: top?.row ?? 0, sha256: top?.sha256.hex ?? "")
        try vault.catalogTransaction { w in try w.setSetting(Self.textAskedKey, ask.description) }
    }

    /// Asks `text/fetch` about the pending blobs `page` lists from a cursor (the blobs, and the cursor
    /// after them), page by page, and stores the texts that come.
    private func askTexts<Cursor: Sendable>(_ version: String, from start: Cursor,
                                            _ page: @escaping (Database, Cursor) throws -> (blobs: [String], next: Cursor)) async throws {
        var cursor = start
        while true {
            try checkNotWiping()
            let (pending, next) = try vault.catalogRead { db in try page(db, cursor) }
            if pending.isEmpty { break }
            var rest = pending[...]
            while !rest.isEmpty {
                let answer = try await client.texts(Array(rest), version: version)
                let texts = answer.texts.filter { $0.sha256.map(pending.contains) ?? false && $0.validationError == nil }
                if !texts.isEmpty {
                    try vault.catalogTransaction { w in
                        for text in texts {
                            guard let blob = text.sha256.flatMap(BlobID.init(hex:)) else { continue }
                            // Stored as extracted at 0 (the time only orders offers): the server has it,
                            // so it is offered again only to another server (whose offer mark starts at -1).
                            try w.storeText(of: blob, version: version, text: text.text, error: text.failed, at: 0)
                        }
                    }
                    report.textsDownloaded += texts.count
                }
                guard answer.more, let answered = answer.texts.last?.sha256, let index = rest.firstIndex(of: answered) else { break }
                rest = rest[(index + 1)...]
            }
            cursor = next
        }
    }
}

/// What the last ask for texts covered: the extractor version, the account's text counter it was
/// made at, and the vault's last blob row then (`row` 0: the vault had no blob).
struct TextAsk: CustomStringConvertible, Equatable {
    var version: String
    var seq: Int64
    var row: Int64
    var sha256: String

    /// Parses the stored form, `VERSION SEQ ROW SHA256`; anything else is no mark (everything is asked).
    init?(_ stored: String) {
        let parts = stored.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 4, let seq = Int64(parts[1]), let row = Int64(parts[2]) else { return nil }
        (version, self.seq, self.row, sha256) = (parts[0], seq, row, parts[3])
    }

    init(version: String, seq: Int64, row: Int64, sha256: String) {
        (self.version, self.seq, self.row, self.sha256) = (version, seq, row, sha256)
    }

    var description: String { "\(version) \(seq) \(row) \(sha256)" }
}

/// The blobs of receipts the server took for the first time in this sync's push: the server may
/// not have let this account read them before, so their texts are offered and asked about again.
/// At most `limit` are kept (memory does not grow with the push); past that, `overflow` says to
/// offer and ask about everything instead.
struct FirstPushed {
    static let limit = 4096
    private(set) var blobs = Set<String>()
    private(set) var overflow = false

    mutating func note(_ receipt: WireReceipt?) {
        guard !overflow else { return }
        for attachment in receipt?.attachments ?? [] { blobs.insert(attachment.sha256) }
        if blobs.count > Self.limit {
            overflow = true
            blobs = []
        }
    }

    /// The addresses in order, in chunks of at most `size`.
    func sorted(_ size: Int) -> [[String]] {
        let all = blobs.sorted()
        return stride(from: 0, to: all.count, by: size).map { Array(all[$0..<min($0 + size, all.count)]) }
    }
}
