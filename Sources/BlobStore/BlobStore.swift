#if canImport(Glibc)
import Glibc
#endif
import CFileOps

/// How a blob's bytes are kept in its file. Recorded by whoever references the blob; `detectEncoding`
/// recovers it from the file alone (used when the catalog is lost).
public enum BlobEncoding: String, Sendable, Codable, CaseIterable {
    case identity
    case xz
}

/// What the writer should do about compression. `auto` compresses only where it saves >= 10 %.
public enum CompressionMode: String, Sendable, Codable, CaseIterable {
    case none, xz, auto
}

public enum BlobError: Error, CustomStringConvertible, Sendable {
    /// No file holds the blob.
    case missing(BlobID)
    /// The file exists but its bytes do not decode or hash to the address.
    case corrupt(BlobID, detail: String)
    /// The input did not hash to the address the caller expected.
    case mismatch(expected: BlobID, actual: BlobID)
    case io(PathError)

    public var description: String {
        switch self {
        case .missing(let id): return "blob \(id) is missing from the store"
        case .corrupt(let id, let detail): return "blob \(id) is corrupt: \(detail)"
        case .mismatch(let expected, let actual):
            return "content hashes to \(actual), not to the expected \(expected)"
        case .io(let error): return error.description
        }
    }
}

/// The outcome of writing one blob.
public struct StoredBlob: Sendable, Equatable {
    public let id: BlobID
    /// Original size in bytes.
    public let size: Int64
    /// Bytes in the file (after compression).
    public let storedSize: Int64
    public let encoding: BlobEncoding
    /// True when an identical blob was already installed and the staging file was dropped.
    public let deduplicated: Bool

    init(id: BlobID, size: Int64, storedSize: Int64, encoding: BlobEncoding, deduplicated: Bool) {
        self.id = id
        self.size = size
        self.storedSize = storedSize
        self.encoding = encoding
        self.deduplicated = deduplicated
    }
}

/// A file found under `blobs/`.
public struct BlobFile: Sendable {
    public let path: String
    /// nil when the file's name or place is not that of a blob (an unknown file).
    public let id: BlobID?
    public let storedSize: Int64
    public let mtimeNanoseconds: Int64
}

/// A staging file found under `interim/`.
public struct InterimFile: Sendable {
    public let path: String
    public let mtimeNanoseconds: Int64
    /// True when a running process holds the staging file's lock (it is mid-write).
    public let owned: Bool
}

/// The on-disk blob tree: `blobs/<2 hex>/<64 hex>` installed blobs, `interim/*.interim` staging files,
/// `quarantine/` for corrupt files set aside. Knows nothing of SQLite or of receipts.
///
/// Contracts:
/// - A blob file appears under `blobs/` only by an atomic rename of a complete, fsynced staging file,
///   followed by an fsync of its folder. A reader therefore sees the whole blob or none of it, and
///   never sees a staging path: staging names are random and are never looked up by address.
/// - Every byte read back is hashed on the way out; a blob that does not hash to its address is
///   reported as corrupt, never served as good.
/// - `remove` is idempotent: removing an absent blob is not an error.
public struct BlobStore: Sendable {
    public static let chunkSize = 1 << 20
    /// liblzma preset for `auto` (fast: xz only pays where the data is compressible) and for `xz`.
    static let autoPreset: UInt32 = 0
    static let xzPreset: UInt32 = 1

    public let root: String
    public let blobsPath: String
    public let interimPath: String
    public let quarantinePath: String

    public init(root: String) {
        self.root = root
        blobsPath = FileSystem.join(root, "blobs")
        interimPath = FileSystem.join(root, "interim")
        quarantinePath = FileSystem.join(root, "quarantine")
    }

    /// Creates the folders the store needs.
    public func prepare() throws {
        // Private: a vault's (or server's) blobs are readable by their owner only.
        try FileSystem.makeDirectories(blobsPath, mode: 0o700)
        try FileSystem.makeDirectories(interimPath, mode: 0o700)
    }

    /// Where the blob's file lives once installed.
    public func path(for id: BlobID) -> String {
        let hex = id.hex
        return blobsPath + "/" + hex.prefix(2) + "/" + hex
    }

    public func contains(_ id: BlobID) -> Bool {
        (try? FileSystem.status(path(for: id)))??.isRegular ?? false
    }

    /// Size of the installed file, nil when absent.
    public func storedSize(of id: BlobID) throws -> Int64? {
        try FileSystem.status(path(for: id)).map(\.size)
    }
}
