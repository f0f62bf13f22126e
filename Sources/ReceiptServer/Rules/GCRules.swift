import BlobStore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What `receipt server gc` removed (or, with `dryRun`, would remove).
public struct ServerGCReport: Encodable, Sendable {
    public struct Blob: Encodable, Sendable {
        public let sha256: String
        public let bytes: Int64
    }
    public var removedBlobs = 0
    public var reclaimedBytes: Int64 = 0
    public var removedInterim = 0
    /// Texts an owner kept of blobs none of its zones references any more.
    public var removedTexts = 0
    public var dryRun: Bool
    public var blobs: [Blob] = []
}

/// The server's garbage collection, safe while the server runs (docs/DESIGN.md, "Server gc").
///
/// A blob is garbage when no record references it and no upload touched it within the grace: its
/// `touchedAt` is at or before `now − grace` (so `--grace 0` takes everything touched up to this
/// millisecond, and a test need not wait for the clock to tick; uploads in flight are reserved in
/// the future, so they are spared whatever the grace). Plan,
/// then execute: the plan is read without blocking anything; then, batch by batch, one write
/// transaction checks each planned blob again, deletes its row (and the possessions of it), and
/// unlinks its file before committing. An upload records its blobs (setting `touchedAt`) in a
/// write transaction BEFORE it renames their files into place, and a push checks the row exists in
/// its write transaction; SQLite lets one write transaction run at a time, so an upload either
/// comes before the batch (the blob was touched: spared) or after it (its row and file come back
/// whole), and a push either sees the blob referenced-to-be or finds it gone and asks for it again.
extension ServerStore {
    /// `receipt server gc`: deletes the blobs no record references and no upload touched within the
    /// grace, and the texts nobody reads.
    public func collectGarbage(graceSeconds: Int64, dryRun: Bool) async throws -> ServerGCReport {
        let lock = try ServerRules.gcLock(blobs.root)
        defer { lock.close() }
        let cutoff = ServerRules.now() - graceSeconds * 1000
        var report = ServerGCReport(dryRun: dryRun)
        let planned = try await transaction(.read) { tx in try await tx.collectableBlobs(touchedBy: cutoff) }
        if dryRun {
            report.blobs = planned.map { ServerGCReport.Blob(sha256: $0.sha256, bytes: $0.size) }
            report.removedTexts = try await transaction(.read) { tx in try await tx.orphanTexts(delete: false) }
        } else {
            report.removedTexts = try await transaction(.write) { tx in try await tx.orphanTexts(delete: true) }
            let store = blobs
            var rest = planned[...]
            while !rest.isEmpty {
                let batch = Array(rest.prefix(ServerRules.gcBatch))
                rest = rest.dropFirst(batch.count)
                report.blobs += try await transaction(.write) { tx in
                    var removed: [ServerGCReport.Blob] = []
                    for blob in batch {
                        guard let id = BlobID(hex: blob.sha256), try await tx.lockCollectable(blob.sha256, touchedBy: cutoff) else { continue }
                        try await tx.deleteBlob(blob.sha256)
                        // Inside the transaction: no upload can record this blob until the file is gone.
                        try store.remove([id])
                        removed.append(ServerGCReport.Blob(sha256: blob.sha256, bytes: blob.size))
                    }
                    return removed
                }
            }
        }
        ServerRules.finish(&report, blobs: blobs, cutoff: cutoff, dryRun: dryRun)
        if !dryRun { try collected() }
        return report
    }
}

extension ServerRules {
    public static let defaultGCGraceSeconds: Int64 = 86_400
    static let gcBatch = 500

    /// One gc at a time on a data folder (a second would only repeat the work): the lock's
    /// descriptor, to close when done.
    static func gcLock(_ dataPath: String) throws -> FileDescriptor {
        try exclusiveLock(FileSystem.join(dataPath, "gc.lock"),
                          held: "another `receipt server gc` is running on \(dataPath)")
    }

    /// Opens `path` and takes its flock without waiting: the descriptor, to close when done, or a
    /// conflict saying `held` when another process has it. An error opening or locking (a file system
    /// without flock) is thrown as it is, naming the file, rather than blamed on another holder.
    static func exclusiveLock(_ path: String, held: String) throws -> FileDescriptor {
        let fd = try FileDescriptor.open(path, O_RDWR | O_CREAT, mode: 0o600)
        do {
            guard try fd.tryLock() else { throw ServerError(.conflict, held) }
            return fd
        } catch {
            fd.close()
            throw error
        }
    }

    /// Totals the report, and removes staging files no running upload owns, past the grace
    /// (a server killed mid-upload).
    static func finish(_ report: inout ServerGCReport, blobs: BlobStore, cutoff: Int64, dryRun: Bool) {
        report.removedBlobs = report.blobs.count
        report.reclaimedBytes = report.blobs.reduce(0) { $0 + $1.bytes }
        // The web view's thumbnails of the blobs gone (WebThumbnails).
        for blob in report.blobs where !dryRun { WebThumbnails.forget(blob.sha256, dataPath: blobs.root) }
        for file in (try? blobs.interimFiles()) ?? [] where !file.owned && file.mtimeNanoseconds / 1_000_000 <= cutoff {
            if !dryRun { try? FileSystem.remove(file.path) }
            report.removedInterim += 1
        }
    }
}
