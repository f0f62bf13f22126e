/// Where a download stages the blobs it receives: a blob store, or a vault (which keeps its store
/// to itself and lends only this).
public protocol BlobStaging: Sendable {
    /// A new staging file for a blob that arrives piece by piece.
    func incoming() throws -> IncomingBlob
    /// Drops a staging file that will not be installed.
    func discard(_ staged: StagedBlob)
}

extension BlobStore: BlobStaging {}
