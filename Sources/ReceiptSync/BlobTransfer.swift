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

    /// A blob file a killed sync installed but did not get to reference: adopted once it verifies
    /// (hashed once, by this check: the ingest takes its `VerifiedBlob`).
    func adopted(_ id: BlobID) -> FetchedBlob? {
        vault.adoptableBlobFile(id).map { FetchedBlob(source: .adopted($0)) }
    }

    /// Downloads blobs for the vault as one bundle: inline bytes (in the returned rows) below the
    /// vault's inline threshold, else staged files, encoded as the vault stores blobs, for the caller
    /// to install (durably) before the rows are inserted. In the order of `ids`.
    func fetch(_ ids: [BlobID]) async throws -> [FetchedBlob] {
        let downloaded = try await client.download(ids, into: vault, inMemoryBelow: vault.settings.inlineThreshold)
        var fetched: [FetchedBlob] = []
        do {
            for blob in downloaded {
                switch blob {
                case .bytes(let bytes):
                    fetched.append(FetchedBlob(source: .bytes(bytes)))
                case .staged(let file):
                    let encoded = try vault.encodedForStorage(file)
                    fetched.append(FetchedBlob(source: .staged(encoded)))
                }
            }
        } catch {
            // Nothing staged outlives a failed fetch: neither what was encoded nor what was not reached.
            for case let staged? in fetched.map(\.staged) { vault.discard(staged) }
            for case .staged(let file) in downloaded.dropFirst(fetched.count) { vault.discard(file) }
            throw error
        }
        return fetched
    }

    /// Uploads the vault's blobs `hexes` as one bundle, their original bytes verified by the server
    /// against their addresses; xz blobs are decoded to staging files first. A blob whose bytes this
    /// vault cannot provide (file missing, cut short, corrupt) is left out, and named in the answer.
    func upload(_ hexes: [String]) async throws -> [String] {
        let rows = try vault.catalogRead { db in
            try hexes.map { hex in (hex, try BlobID(hex: hex).flatMap { try Catalog.blobSummary(db, $0) }) }
        }
        var decoded: [(path: String, lock: FileDescriptor)] = []
        defer {
            for temp in decoded {
                temp.lock.close()
                try? FileSystem.remove(temp.path)
            }
        }
        var parts: [BundlePart] = []
        var problems: [String] = []
        for (hex, row) in rows {
            guard let row, let id = BlobID(hex: hex) else {
                problems.append("blob \(hex) is referenced but not in this vault: run `receipt fsck`")
                continue
            }
            let size = row.size
            if row.isInline {
                let vault = vault
                parts.append(BundlePart(id: id, size: size, source: .load {
                    guard let bytes = try vault.catalogRead({ try Catalog.blob($0, id) })?.inline else {
                        throw SyncError("blob \(id) left this vault during the upload")
                    }
                    return bytes
                }))
            } else if row.encoding == .identity {
                let path = vault.blobFilePath(id)
                guard let status = try? FileSystem.status(path), status.isRegular, status.size == size else {
                    problems.append("blob \(id) is missing from this vault or not its recorded size: run `receipt fsck`")
                    continue
                }
                parts.append(BundlePart(id: id, size: size, source: .file(path)))
            } else {
                try FileSystem.makeDirectories(vault.interimPath, mode: 0o700)
                let temp = vault.interimPath + "/upload-" + SecureRandom.hex(12) + ".interim"
                do {
                    try vault.copyBlob(BlobRecord(sha256: id, size: size, storedSize: size, encoding: row.encoding,
                                                  inline: nil, createdAt: 0), to: temp)
                } catch let error as BlobError {
                    try? FileSystem.remove(temp)
                    problems.append("blob \(id) was not uploaded: \(error): run `receipt fsck`")
                    continue
                }
                // Held while the upload reads it, so fsck sees a staging file a running command owns.
                let lock = try FileDescriptor.open(temp, O_RDONLY)
                _ = try? lock.tryLock()
                decoded.append((temp, lock))
                parts.append(BundlePart(id: id, size: size, source: .file(temp)))
            }
        }
        if !parts.isEmpty { try await client.upload(parts) }
        return problems
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
        self.client = try remote.client()
    }

    /// Downloads blob `id` and stages it (verified against `id`) with the vault's compression, for
    /// the caller to enter through the vault's ingest path (fsck's repair).
    public func restore(_ id: BlobID) async throws -> StagedBlob {
        let downloaded = try await client.download([id], into: vault)
        let staged: StagedBlob
        switch downloaded.first {
        case .staged(let file)?: staged = file
        case .bytes(let bytes)?: staged = try vault.stage(bytes: bytes)
        case nil: throw SyncError("the server sent no bytes for blob \(id)")
        }
        return try vault.encodedForStorage(staged)
    }
}

/// A downloaded (or adopted) blob, for the vault's ingest path.
struct FetchedBlob: Sendable {
    var source: IngestSource

    var staged: StagedBlob? {
        if case .staged(let file) = source { return file }
        return nil
    }
}

extension BlobTransfer {
    /// Removes staging files a killed sync left in `interim/`: its own download and upload files,
    /// blob staging files no running process holds (their writer died), and SQLite's temporary
    /// files. Runs under the sync lock, so no other sync owns any of them.
    ///
    /// SQLite creates a temporary file and unlinks its name at once; a process killed between the
    /// two leaves the name behind. Removing a name whose owner is still between the two is harmless:
    /// the owner keeps its open descriptor and SQLite ignores the result of its own unlink.
    func removeStaleStaging() {
        guard let files = try? vault.interimFiles() else { return }
        for file in files where !file.owned {
            let name = file.path.split(separator: "/").last.map(String.init) ?? ""
            let staging = name.hasSuffix(".interim") && name.utf8.count == 32 + 8
                && name.utf8.prefix(32).allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
            if name.hasPrefix("download-") || name.hasPrefix("upload-") || name.hasPrefix("etilqs_") || staging {
                try? FileSystem.remove(file.path)
            }
        }
    }
}
