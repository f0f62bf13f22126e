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

    /// Downloads blob `hex` and makes it durable in the vault: inline bytes (returned in the record,
    /// for the caller to insert) below the vault's inline threshold, else a file installed under
    /// `blobs/` (the record's row still to be inserted by the caller, after the file is durable).
    func fetch(_ hex: String) async throws -> BlobRecord {
        guard let id = BlobID(hex: hex) else { throw SyncError("\(hex) is not a blob address") }
        let now = nowMillis()
        // A file a killed sync installed but did not get to reference: adopt it once it verifies.
        if let storedSize = try? vault.blobs.storedSize(of: id), let encoding = try? vault.blobs.detectEncoding(id),
           let size = try? vault.blobs.verify(id, encoding: encoding), size >= vault.settings.inlineThreshold {
            return BlobRecord(sha256: id.hex, size: size, storedSize: storedSize, encoding: encoding.rawValue,
                              inline: nil, createdAt: now)
        }
        try FileSystem.makeDirectories(vault.blobs.interimPath)
        let temp = vault.blobs.interimPath + "/download-" + SecureRandom.hex(12) + ".interim"
        let size = try await client.download(id, to: temp)
        defer { try? FileSystem.remove(temp) }
        if size < vault.settings.inlineThreshold {
            var bytes = [UInt8](repeating: 0, count: Int(size))
            let n = try FileDescriptor.with(temp, O_RDONLY) { fd in try bytes.withUnsafeMutableBytes { try fd.readFully(into: $0) } }
            guard n == Int(size), SHA256Hasher.hash(bytes) == id else {
                throw SyncError("the downloaded blob \(id) changed on disk before it was stored")
            }
            return BlobRecord(sha256: id.hex, size: size, storedSize: size, encoding: BlobEncoding.identity.rawValue,
                              inline: bytes, createdAt: now)
        }
        let stored = try vault.blobs.install(verifiedFileAt: temp, as: id, compression: vault.settings.compression)
        return BlobRecord(sha256: id.hex, size: stored.size, storedSize: stored.storedSize,
                          encoding: stored.encoding.rawValue, inline: nil, createdAt: now)
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

    /// Downloads blob `id` into a new file at `destination` (which must not exist), verified
    /// against the address (the file is removed and an error thrown otherwise). Returns its size.
    /// The server answers only for blobs of zones the account can read.
    public func fetch(_ id: BlobID, to destination: String) async throws -> Int64 {
        try await client.download(id, to: destination)
    }

    /// Downloads blob `id` and installs it in the vault's blob tree as an external file, with the
    /// vault's compression. Returns how it was stored, for the caller to update the blob's row
    /// (encoding, stored size) if they differ. Use it for a blob whose row says it is external.
    public func restore(_ id: BlobID) async throws -> StoredBlob {
        try FileSystem.makeDirectories(vault.blobs.interimPath)
        let temp = vault.blobs.interimPath + "/download-" + SecureRandom.hex(12) + ".interim"
        defer { try? FileSystem.remove(temp) }
        _ = try await client.download(id, to: temp)
        return try FileDescriptor.with(temp, O_RDONLY) { fd in
            try vault.blobs.write(from: fd, compression: vault.settings.compression, expected: id)
        }
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
