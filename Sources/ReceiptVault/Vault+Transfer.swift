import BlobStore

/// What the sync engine needs of the blob tree, so `Vault.blobs` stays the vault's own: downloads
/// stage into the vault (`BlobStaging`) and enter it through the ingest path; uploads read blob
/// files by path.
extension Vault: BlobStaging {
    public func incoming() throws -> IncomingBlob {
        try blobs.incoming()
    }

    public func discard(_ staged: StagedBlob) {
        blobs.discard(staged)
    }

    /// Staged original bytes, encoded as this vault stores blobs (its compression setting).
    public func encodedForStorage(_ staged: StagedBlob) throws -> StagedBlob {
        try blobs.encoded(staged, compression: settings.compression)
    }

    /// Bytes in memory as a staging file, uncompressed.
    public func stage(bytes: [UInt8]) throws -> StagedBlob {
        try blobs.stage(bytes: bytes, compression: .none)
    }

    /// A blob file a killed sync installed but did not get to reference, verified (hashed) here once:
    /// the ingest path adopts it from this value (`IngestSource.adopted`) without reading it again.
    /// nil when it does not verify, or is small enough to be kept in the catalog instead.
    public func adoptableBlobFile(_ id: BlobID) -> VerifiedBlob? {
        guard (try? blobs.storedSize(of: id)) != nil, let blob = try? blobs.verifyEitherEncoding(id),
              blob.size >= settings.inlineThreshold else { return nil }
        return blob
    }

    /// The path of a blob's file in the tree (uploads read identity-encoded files from it).
    public func blobFilePath(_ id: BlobID) -> String {
        blobs.path(for: id)
    }

    /// The folder of staging files.
    public var interimPath: String { blobs.interimPath }

    /// The staging files in `interim/`, with whether a running process holds each.
    public func interimFiles() throws -> [InterimFile] {
        try blobs.interimFiles()
    }
}
