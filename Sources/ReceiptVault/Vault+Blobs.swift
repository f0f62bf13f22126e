import BlobStore
import Foundation
import GRDB
import ReceiptCatalog
import ReceiptText

public struct VaultStats: Codable, Sendable, Equatable {
    public var receipts: Int
    public var attachments: Int
    public var blobs: Int
    public var externalBlobs: Int
    public var inlineBlobs: Int
    /// Original bytes of every blob, each counted once.
    public var logicalBytes: Int64
    /// Bytes the blobs take: files (after compression) plus inline bytes.
    public var storedBytes: Int64
    /// Referenced blobs whose text is extracted (or recorded as failed) by the current extractor.
    public var indexedBlobs: Int = 0
    /// Referenced blobs whose text is still to extract (`receipt index`).
    public var pendingIndex: Int = 0
}

extension Vault {
    /// Adds files as attachments of an existing receipt (a file whose content the receipt already
    /// holds is not added twice).
    @discardableResult
    public func attach(_ idOrPrefix: String, paths: [String]) throws -> ReceiptView {
        var skipped: [FailedFile] = []
        let inputs = try collectInputs(paths, skipped: &skipped)
        if let first = skipped.first { throw VaultError.bad("cannot attach \(first.path): \(first.error)") }
        return try wrapped {
            let id = try catalog.read { db -> ReceiptID in
                let id = try resolveReceipt(db, idOrPrefix)
                guard let r = try Catalog.receipt(db, id) else { throw VaultError(.notFound, "no receipt \(idOrPrefix)") }
                try requireWritable(db, r.zone)
                return id
            }
            return try ingestOnce(inputs.map { .file($0) }) { w, ingested in
                let db = w.db
                guard var receipt = try Catalog.receipt(db, id) else {
                    throw VaultError(.notFound, "receipt \(id) was deleted meanwhile")
                }
                var position = try Catalog.nextPosition(db, receiptID: id)
                for (input, blob) in zip(inputs, ingested) {
                    if try w.insertAttachment(receiptID: id, blob: blob.id, size: blob.size, filename: input.name,
                                              mediaType: blob.mediaType, position: position) {
                        position += 1
                    }
                }
                receipt.modifiedAt = w.now
                try w.changeReceipt(receipt)
                return try views(db, [receipt])[0]
            }
        }
    }

    /// The catalog's record of a blob, by its full 64-hex address.
    public func blobRecord(_ hex: String) throws -> BlobRecord {
        guard let id = BlobID(hex: hex) else {
            throw VaultError.bad("invalid blob address '\(hex)': expected 64 hexadecimal characters")
        }
        guard let record = try wrapped({ try catalog.read { try Catalog.blob($0, id) } }) else {
            throw VaultError(.notFound, "no blob \(id.hex) in this vault")
        }
        return record
    }

    /// Streams a blob's original bytes to `sink`, verifying them against the address. Throws a
    /// `BlobError` (missing, corrupt) naming the blob when they do not verify.
    @discardableResult
    public func readBlob(_ record: BlobRecord, into sink: (UnsafeRawBufferPointer) throws -> Void) throws -> Int64 {
        let id = record.sha256
        if let inline = record.inline {
            let hasher = SHA256Hasher()
            inline.withUnsafeBytes { hasher.update($0) }
            let actual = hasher.finalize()
            guard actual == id else { throw BlobError.corrupt(id, detail: "its inline bytes hash to \(actual)") }
            try inline.withUnsafeBytes { try sink($0) }
            return Int64(inline.count)
        }
        return try blobs.read(id, encoding: record.encoding, into: sink)
    }

    /// Copies a blob's original bytes to a new file, verified (see `BlobStore.copy`).
    public func copyBlob(_ record: BlobRecord, to destination: String) throws {
        let out = try FileDescriptor.open(destination, O_WRONLY | O_CREAT | O_EXCL, mode: 0o644)
        defer { out.close() }
        try copyBlob(record, into: out)
    }

    /// `copyBlob(_:to:)` into a new file created (empty) by the caller; removed on failure.
    public func copyBlob(_ record: BlobRecord, into out: FileDescriptor) throws {
        let id = record.sha256
        if record.inline != nil {
            do {
                try readBlob(record) { try out.write($0) }
            } catch {
                try? FileSystem.remove(out.path)
                throw error
            }
            return
        }
        try blobs.copy(id, encoding: record.encoding, into: out)
    }

    public func stats() throws -> VaultStats {
        try wrapped {
            try catalog.read { db in
                let c = try Catalog.counts(db)
                let text = try Catalog.textCounts(db, version: TextExtractor.version)
                return VaultStats(receipts: c.receipts, attachments: c.attachments, blobs: c.blobs, externalBlobs: c.externalBlobs,
                                  inlineBlobs: c.inlineBlobs, logicalBytes: c.logicalBytes, storedBytes: c.storedBytes,
                                  indexedBlobs: text.indexed, pendingIndex: text.pending)
            }
        }
    }
}
