import BlobStore
import Foundation
import GRDB
import MediaTypes
import ReceiptCatalog

/// Preparing each kind of `IngestSource` (on the workers of `Vault.ingest`).
extension Vault {
    func prepare(_ source: IngestSource) throws -> PreparedBlob {
        switch source {
        case .file(let input):
            return try prepare(input)
        case .bytes(let bytes):
            let mediaType = bytes.prefix(4096).withUnsafeBytes { MediaType.of(head: $0, filename: "") }
            if Int64(bytes.count) < settings.inlineThreshold {
                return PreparedBlob(inline: DurableBlob(inline: bytes), mediaType: mediaType)
            }
            let staged = try blobs.stage(bytes: bytes, compression: settings.compression)
            return PreparedBlob(id: staged.id, size: staged.size, mediaType: mediaType, inline: nil, staged: staged)
        case .staged(let staged):
            return PreparedBlob(id: staged.id, size: staged.size, mediaType: "application/octet-stream", inline: nil, staged: staged)
        case .adopted(let verified):
            let durable = try blobs.makeDurable([verified])[0]
            return PreparedBlob(id: verified.id, size: durable.size, mediaType: try Self.sniffMediaType(blobs, verified.id, durable.encoding),
                                inline: nil, staged: nil, adopted: durable)
        }
    }

    /// Reads one file: from the stat cache when unchanged, else hashed (small ones kept in memory for
    /// the catalog, larger ones staged under interim/).
    func prepare(_ input: InputFile) throws -> PreparedBlob {
        try FileDescriptor.with(input.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK) { fd in
            let st = try fd.stat()
            if let checked = input.checked { return try prepare(fd, st, checked) }
            guard st.isRegular else { throw PathError("reading", path: input.path, errno: EINVAL) }
            var head = [UInt8](repeating: 0, count: 4096)
            let headCount = try head.withUnsafeMutableBytes { try fd.readFully(into: $0) }
            let mediaType = head.withUnsafeBytes {
                MediaType.of(head: UnsafeRawBufferPointer(rebasing: $0[..<headCount]), filename: input.name)
            }
            if let cached = try cachedBlob(input, st) {
                return PreparedBlob(id: cached, size: st.size, mediaType: mediaType, inline: nil, staged: nil)
            }
            try fd.seek(to: 0)
            if st.size < settings.inlineThreshold {
                var bytes = [UInt8](repeating: 0, count: Int(st.size) + 1)
                let n = try bytes.withUnsafeMutableBytes { try fd.readFully(into: $0) }
                if n <= st.size {
                    bytes.removeLast(bytes.count - n)
                    return PreparedBlob(inline: DurableBlob(inline: bytes), mediaType: mediaType)
                }
                try fd.seek(to: 0)  // the file grew while we read it: stage it as a large one
            }
            let staged = try blobs.stage(from: fd, compression: settings.compression)
            return PreparedBlob(id: staged.id, size: staged.size, mediaType: mediaType, inline: nil, staged: staged)
        }
    }

    private func cachedBlob(_ input: InputFile, _ st: FileStatus) throws -> BlobID? {
        try catalog.read { db -> BlobID? in
            guard let cached = try Catalog.cachedImport(db, path: input.path, status: st),
                  cached.inline || blobs.contains(cached.id) else { return nil }
            return cached.id
        }
    }


    /// A file a manifest row checked: read again, and refused (naming the row's path) when it no
    /// longer hashes as it did.
    private func prepare(_ fd: FileDescriptor, _ st: FileStatus, _ checked: InputFile.Checked) throws -> PreparedBlob {
        func changed(_ now: BlobID) -> VaultError {
            VaultError.bad("\(fd.path) changed while it was being imported (it now hashes to \(now))")
        }
        guard st.isRegular else { throw VaultError.bad("\(fd.path) is no longer a regular file") }
        if st.size < settings.inlineThreshold {
            var bytes = [UInt8](repeating: 0, count: Int(st.size) + 1)
            let n = try bytes.withUnsafeMutableBytes { try fd.readFully(into: $0) }
            bytes.removeLast(bytes.count - min(n, bytes.count))
            let blob = DurableBlob(inline: bytes)
            guard blob.id == checked.id, n <= st.size else { throw changed(blob.id) }
            return PreparedBlob(inline: blob, mediaType: checked.mediaType)
        }
        do {
            let staged = try blobs.stage(from: fd, compression: settings.compression, expected: checked.id)
            return PreparedBlob(id: staged.id, size: staged.size, mediaType: checked.mediaType, inline: nil, staged: staged)
        } catch BlobError.mismatch(_, let actual) {
            throw changed(actual)
        }
    }
}
