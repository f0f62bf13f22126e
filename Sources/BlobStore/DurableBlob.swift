#if canImport(Glibc)
import Glibc
#endif

/// A blob file of the tree whose bytes were just re-read and hash to its address (`BlobStore.verify`).
/// Not yet known to be on disk: `BlobStore.makeDurable` turns it into a `DurableBlob`.
public struct VerifiedBlob: Sendable, Equatable {
    public let id: BlobID
    /// Original size in bytes.
    public let size: Int64
    /// Bytes in the file.
    public let storedSize: Int64
    public let encoding: BlobEncoding
}

/// A blob whose bytes survive a power cut from now on: bytes kept inline in the catalog (the row
/// that holds them is their one copy, written in the same transaction), or a file of the tree that
/// was made durable under its address (`install`, `makeDurable`). The catalog writes a blob row only
/// from one of these (I1 in docs/DESIGN.md), and only this module makes one for a file.
public struct DurableBlob: Sendable, Equatable {
    public let id: BlobID
    public let size: Int64
    public let storedSize: Int64
    public let encoding: BlobEncoding
    /// The bytes, for a blob kept in the catalog; nil for a file of the tree.
    public let inline: [UInt8]?

    init(file id: BlobID, size: Int64, storedSize: Int64, encoding: BlobEncoding) {
        self.id = id
        self.size = size
        self.storedSize = storedSize
        self.encoding = encoding
        inline = nil
    }

    /// Bytes to keep in the catalog, addressed by their hash (computed here, so the address cannot lie).
    public init(inline bytes: [UInt8]) {
        id = SHA256Hasher.hash(bytes)
        size = Int64(bytes.count)
        storedSize = size
        encoding = .identity
        inline = bytes
    }
}

extension StoredBlob {
    /// `install` returns only after the file and its rename are durable.
    public var durable: DurableBlob {
        DurableBlob(file: id, size: size, storedSize: storedSize, encoding: encoding)
    }
}

extension BlobStore {
    /// Re-reads and re-hashes the blob's file; throws `.missing` or `.corrupt` as `read`.
    @discardableResult
    public func verify(_ id: BlobID, encoding: BlobEncoding) throws -> VerifiedBlob {
        let fd = try openInstalled(id)
        defer { fd.close() }
        let storedSize = try fd.stat().size
        let size = try Self.decode(fd, id: id, encoding: encoding) { _ in }
        return VerifiedBlob(id: id, size: size, storedSize: storedSize, encoding: encoding)
    }

    /// The blob's file verified in whichever encoding it holds: identity when it hashes to its
    /// name, xz when it decodes to bytes that do. nil when neither (the file is corrupt).
    public func verifyEitherEncoding(_ id: BlobID) throws -> VerifiedBlob? {
        for encoding in [BlobEncoding.identity, .xz] {
            do {
                return try verify(id, encoding: encoding)
            } catch BlobError.corrupt {
                continue
            }
        }
        return nil
    }

    /// Makes verified files durable where they are (a file a killed writer installed without its
    /// flushes, found again): an fsync of each file and its folder for a few, one syncfs for many.
    public func makeDurable(_ verified: [VerifiedBlob]) throws -> [DurableBlob] {
        if verified.count >= Self.syncfsBatch {
            try FileSystem.syncFileSystem(containing: blobsPath)
        } else {
            for blob in verified {
                try FileDescriptor.with(path(for: blob.id), O_RDONLY) { try $0.sync() }
                try FileSystem.syncDirectory(blobsPath + "/" + blob.id.fanOut)
            }
        }
        return verified.map { DurableBlob(file: $0.id, size: $0.size, storedSize: $0.storedSize, encoding: $0.encoding) }
    }
}
