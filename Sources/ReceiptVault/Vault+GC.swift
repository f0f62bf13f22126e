import BlobStore
import Foundation
import GRDB
import ReceiptCatalog

/// What one gc run removed (or, with `dryRun`, would remove). The first four fields are the
/// contract's JSON shape; the lists say exactly what.
public struct GCReport: Codable, Sendable, Equatable {
    public var removedBlobs: Int
    /// Stored bytes freed: blob files (after compression), inline bytes and staging files.
    public var reclaimedBytes: Int64
    public var removedInterim: Int
    public var dryRun: Bool
    public var blobs: [GCPlan.Blob]
    public var interim: [GCPlan.Interim]
    /// Blob files no row records that are older than the catalog itself: not crash leftovers but
    /// bytes a lost catalog used to describe. gc never deletes them; `fsck --repair` adopts them.
    public var keptOlderThanCatalog: [String]
}

/// The garbage gc found, decided under the exclusive vault lock. `Vault.collectGarbage` executes it
/// under the same lock hold; `--dry-run` only shows it.
public struct GCPlan: Sendable, Equatable {
    public struct Blob: Codable, Sendable, Equatable {
        public var sha256: String
        /// Bytes it takes: the file's size, or the inline bytes.
        public var bytes: Int64
        public var inline: Bool
        /// False for a file no catalog row records (left by an import killed between install and commit).
        public var hasRow: Bool
    }

    public struct Interim: Codable, Sendable, Equatable {
        public var path: String
        public var bytes: Int64
    }

    public var blobs: [Blob] = []
    public var interim: [Interim] = []
    public var keptOlderThanCatalog: [String] = []
    /// Everything last modified before this instant (nanoseconds since 1970) is past the grace.
    public var cutoffNanoseconds: Int64 = 0

    func report(dryRun: Bool) -> GCReport {
        GCReport(removedBlobs: blobs.count,
                 reclaimedBytes: blobs.reduce(0) { $0 + $1.bytes } + interim.reduce(0) { $0 + $1.bytes },
                 removedInterim: interim.count, dryRun: dryRun, blobs: blobs, interim: interim,
                 keptOlderThanCatalog: keptOlderThanCatalog)
    }
}

/// `--grace` values: `0`, or a whole number with a unit `s`, `m`, `h`, `d` or `w` (`30s`, `10m`,
/// `1h`, `2d`). A bare number is seconds.
public enum GraceDuration {
    public static let defaultText = "1h"

    /// The duration in seconds, nil when `text` is not a duration.
    public static func seconds(_ text: String) -> Int64? {
        var digits = Substring(text.trimmingCharacters(in: .whitespaces))
        var unit: Int64 = 1
        if let last = digits.last, !last.isNumber {
            switch last {
            case "s": unit = 1
            case "m": unit = 60
            case "h": unit = 3600
            case "d": unit = 86_400
            case "w": unit = 604_800
            default: return nil
            }
            digits = digits.dropLast()
        }
        guard !digits.isEmpty, digits.count <= 12, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
              let n = Int64(digits) else { return nil }
        let (product, overflow) = n.multipliedReportingOverflow(by: unit)
        guard !overflow, product <= 100 * 365 * 86_400 else { return nil }
        return product
    }
}

func realtimeNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

extension Vault {
    /// Deletes unreferenced blobs and stale staging files older than `graceSeconds`, holding the
    /// exclusive vault lock from planning to the last unlink (docs/DESIGN.md, "gc"). With `dryRun`
    /// the plan is returned and nothing changes.
    public func collectGarbage(graceSeconds: Int64, dryRun: Bool = false,
                               progress: ((_ done: Int, _ total: Int) -> Void)? = nil) throws -> GCReport {
        guard graceSeconds >= 0 else { throw VaultError.bad("invalid grace \(graceSeconds): must be 0 or more seconds") }
        return try wrapped {
            try locked(.exclusive) {
                let plan = try gcPlan(graceSeconds: graceSeconds)
                if dryRun { return plan.report(dryRun: true) }
                return try executeGC(plan, progress: progress)
            }
        }
    }

    /// Marks every blob an attachment refers to and lists the rest that are past the grace.
    /// Call only under the exclusive vault lock.
    func gcPlan(graceSeconds: Int64) throws -> GCPlan {
        var plan = GCPlan()
        plan.cutoffNanoseconds = realtimeNanoseconds() - graceSeconds * 1_000_000_000
        let cutoff = plan.cutoffNanoseconds
        // Roots: attachments of every receipt. A receipt with pending outbox changes is covered by its
        // attachments; a deleted receipt's push needs no bytes (docs/DESIGN.md, "gc").
        // Streamed: the candidates are the unreferenced rows only, and each blob file is looked up in
        // the catalog as it is listed, so memory does not grow with the vault (a set of every row's
        // address took ~100 MB at a million blobs).
        try catalog.read { db in
            try Catalog.forEachUnreferencedBlob(db) { c in
                if c.isInline {
                    if c.createdAt * 1_000_000 < cutoff {
                        plan.blobs.append(.init(sha256: c.id.hex, bytes: c.storedSize, inline: true, hasRow: true))
                    }
                    return
                }
                if let st = try FileSystem.status(blobs.path(for: c.id)) {
                    // A dedup hit refreshes the mtime: the file's age, not the row's, is what counts.
                    guard st.isRegular, st.mtimeNanoseconds < cutoff else { return }
                    plan.blobs.append(.init(sha256: c.id.hex, bytes: st.size, inline: false, hasRow: true))
                } else if c.createdAt * 1_000_000 < cutoff {
                    plan.blobs.append(.init(sha256: c.id.hex, bytes: 0, inline: false, hasRow: true))
                }
            }
            let birthNanoseconds = (try Catalog.birth(db) ?? 0) * 1_000_000
            try blobs.forEachFile { file in
                guard let id = file.id, file.mtimeNanoseconds < cutoff, try !Catalog.hasBlob(db, id) else { return }
                if file.mtimeNanoseconds < birthNanoseconds {
                    plan.keptOlderThanCatalog.append(id.hex)
                } else {
                    plan.blobs.append(.init(sha256: id.hex, bytes: file.storedSize, inline: false, hasRow: false))
                }
            }
        }
        for staged in try blobs.interimFiles() where !staged.owned && staged.mtimeNanoseconds < cutoff {
            guard let st = try FileSystem.status(staged.path), st.isRegular else { continue }
            plan.interim.append(.init(path: staged.path, bytes: st.size))
        }
        return plan
    }

    /// Deletes what `plan` lists, re-checking each item first: rows are deleted in one transaction
    /// only while nothing refers to them; a file is unlinked only while still past the grace.
    func executeGC(_ plan: GCPlan, progress: ((Int, Int) -> Void)?) throws -> GCReport {
        let total = plan.blobs.count + plan.interim.count
        var done = 0
        // 1. Rows, in one transaction, each only if still unreferenced (and the foreign key agrees).
        let removedRows: Set<String> = try catalog.transaction { w in
            var removed = Set<BlobID>()
            for blob in plan.blobs {
                guard let id = BlobID(hex: blob.sha256) else { continue }
                if blob.hasRow {
                    if try w.deleteBlobIfUnreferenced(id) { removed.insert(id) }
                } else if try !Catalog.hasBlob(w.db, id) {
                    removed.insert(id)
                }
            }
            for id in removed { try w.forgetImports(of: id) }
            return Set(removed.map(\.hex))
        }
        // 2. Files, after their rows are gone: a crash in between leaves orphan files, never a row
        //    pointing at nothing.
        var removedBlobs: [GCPlan.Blob] = []
        var unlink: [BlobID] = []
        for blob in plan.blobs where removedRows.contains(blob.sha256) {
            guard let id = BlobID(hex: blob.sha256) else { continue }
            if !blob.inline, let st = try FileSystem.status(blobs.path(for: id)) {
                if st.isRegular && st.mtimeNanoseconds < plan.cutoffNanoseconds {
                    unlink.append(id)
                    removedBlobs.append(blob)
                } else if blob.hasRow {
                    // Touched since planning (someone is about to refer to it): keep the file, which
                    // is now an orphan a later gc or an import's dedup will settle.
                    removedBlobs.append(GCPlan.Blob(sha256: blob.sha256, bytes: 0, inline: false, hasRow: true))
                }
            } else {
                removedBlobs.append(blob)
            }
        }
        var start = unlink.startIndex
        while start < unlink.endIndex {
            let end = min(start + 256, unlink.endIndex)
            try blobs.remove(Array(unlink[start..<end]))
            done += end - start
            progress?(done, total)
            start = end
        }
        // 3. Stale staging files: nobody holds their lock and they are past the grace.
        var removedInterim: [GCPlan.Interim] = []
        let currentInterim = Dictionary(try blobs.interimFiles().map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
        for staged in plan.interim {
            guard let current = currentInterim[staged.path], !current.owned, current.mtimeNanoseconds < plan.cutoffNanoseconds else { continue }
            try FileSystem.remove(staged.path)
            removedInterim.append(staged)
            done += 1
            progress?(done, total)
        }
        if !removedInterim.isEmpty { try FileSystem.syncDirectory(blobs.interimPath) }
        var result = GCPlan()
        result.blobs = removedBlobs
        result.interim = removedInterim
        result.keptOlderThanCatalog = plan.keptOlderThanCatalog
        return result.report(dryRun: false)
    }
}
