import BlobStore
import GRDB
import ReceiptCatalog
import ReceiptVault
#if canImport(Glibc)
import Glibc
#endif

/// Moving blob bytes between a vault and the server.
struct BlobTransfer {
    let vault: Vault
    let client: SyncClient

    /// Downloads blob `hex` for the vault: inline bytes (in the returned row) below the vault's inline
    /// threshold, else a staged file, encoded as the vault stores blobs, for the caller to install
    /// (durably) before the row is inserted.
    func fetch(_ hex: String) async throws -> FetchedBlob {
        guard let id = BlobID(hex: hex) else { throw SyncError("\(hex) is not a blob address") }
        let now = nowMillis()
        // A file a killed sync installed but did not get to reference: adopt it once it verifies.
        if let storedSize = try? vault.blobs.storedSize(of: id), let encoding = try? vault.blobs.detectEncoding(id),
           let size = try? vault.blobs.verify(id, encoding: encoding), size >= vault.settings.inlineThreshold {
            return FetchedBlob(record: BlobRecord(sha256: id.hex, size: size, storedSize: storedSize, encoding: encoding.rawValue,
                                                  inline: nil, createdAt: now), staged: nil)
        }
        let threshold = vault.settings.inlineThreshold
        let staged: StagedBlob
        switch try await client.download(id, into: vault.blobs, inMemoryBelow: threshold) {
        case .bytes(let bytes):
            return FetchedBlob(record: BlobRecord(sha256: id.hex, size: Int64(bytes.count), storedSize: Int64(bytes.count),
                                                  encoding: BlobEncoding.identity.rawValue, inline: bytes, createdAt: now), staged: nil)
        case .staged(let file) where file.size < threshold:
            // The server did not announce the size: keep small bytes inline all the same.
            defer { vault.blobs.discard(file) }
            do {
                let bytes = try vault.blobs.contents(of: file)
                return FetchedBlob(record: BlobRecord(sha256: id.hex, size: file.size, storedSize: file.size,
                                                      encoding: BlobEncoding.identity.rawValue, inline: bytes, createdAt: now), staged: nil)
            } catch let error as BlobError {
                throw SyncError("the downloaded blob \(id) was not stored: \(error)")
            }
        case .staged(let file):
            staged = file
        }
        let encoded = try vault.blobs.encoded(staged, compression: vault.settings.compression)
        return FetchedBlob(record: BlobRecord(sha256: id.hex, size: encoded.size, storedSize: encoded.storedSize,
                                              encoding: encoded.encoding.rawValue, inline: nil, createdAt: now), staged: encoded)
    }

    /// Uploads the vault's blob `hex`, its original bytes verified by the server against the address.
    func upload(_ hex: String) async throws {
        guard let id = BlobID(hex: hex) else { throw SyncError("\(hex) is not a blob address") }
        guard let record = try vault.catalog.read({ try BlobRecord.fetchOne($0, key: hex) }) else {
            throw SyncError("blob \(hex) is referenced but not in this vault: run `receipt fsck`")
        }
        if let inline = record.inline {
            try await client.upload(id, bytes: inline)
        } else if record.encoding == BlobEncoding.identity.rawValue {
            try await client.upload(id, fileAt: vault.blobs.path(for: id))
        } else {
            try FileSystem.makeDirectories(vault.blobs.interimPath)
            let temp = vault.blobs.interimPath + "/upload-" + SecureRandom.hex(12) + ".interim"
            defer { try? FileSystem.remove(temp) }
            try vault.copyBlob(record, to: temp)
            // Held while the upload reads it, so fsck sees a staging file a running command owns.
            let lock = try FileDescriptor.open(temp, O_RDONLY)
            defer { lock.close() }
            _ = flock(lock.raw, LOCK_EX | LOCK_NB)
            try await client.upload(id, fileAt: temp)
        }
    }
}

/// The seam `receipt fsck --repair` uses to fetch missing or corrupt blobs back from the server.
public struct RemoteBlobFetcher: Sendable {
    let vault: Vault
    let client: SyncClient

    /// nil when the vault has no remote set.
    public init?(vault: Vault) throws {
        guard let remote = try RemoteConfig.load(vault) else { return nil }
        self.vault = vault
        self.client = remote.client()
    }

    /// Downloads blob `id` and installs it in the vault's blob tree as an external file, with the
    /// vault's compression. Returns how it was stored, for the caller to update the blob's row
    /// (encoding, stored size) if they differ. Use it for a blob whose row says it is external.
    public func restore(_ id: BlobID) async throws -> StoredBlob {
        let staged: StagedBlob
        switch try await client.download(id, into: vault.blobs) {
        case .staged(let file): staged = file
        case .bytes(let bytes): staged = try vault.blobs.stage(bytes: bytes, compression: .none)
        }
        return try vault.blobs.install([vault.blobs.encoded(staged, compression: vault.settings.compression)])[0]
    }
}

/// A downloaded blob: its row, and for an external one the staged file to install before the row.
struct FetchedBlob: Sendable {
    var record: BlobRecord
    var staged: StagedBlob?

    /// The row as the installed file says: an identical blob already there may be stored otherwise.
    func installed(as stored: StoredBlob?) -> BlobRecord {
        guard let stored else { return record }
        var row = record
        row.storedSize = stored.storedSize
        row.encoding = stored.encoding.rawValue
        return row
    }
}

extension BlobTransfer {
    /// Removes staging files a killed sync left in `interim/`: its own download and upload files,
    /// and blob staging files no running process holds (their writer died). Runs under the sync
    /// lock, so no other sync owns any of them.
    func removeStaleStaging() {
        guard let files = try? vault.blobs.interimFiles() else { return }
        for file in files where !file.owned {
            let name = file.path.split(separator: "/").last.map(String.init) ?? ""
            let staging = name.hasSuffix(".interim") && name.utf8.count == 32 + 8
                && name.utf8.prefix(32).allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
            if name.hasPrefix("download-") || name.hasPrefix("upload-") || staging {
                try? FileSystem.remove(file.path)
            }
        }
    }
}
