import BlobStore
import Foundation
import GRDB
import ReceiptCatalog

/// The contract's problem kinds.
public enum FsckProblemKind: String, Codable, Sendable, CaseIterable {
    case corruptBlob = "corrupt-blob"
    case missingBlob = "missing-blob"
    case orphanBlob = "orphan-blob"
    case staleInterim = "stale-interim"
    case unknownFile = "unknown-file"
    case catalog
    case permissions
}

/// How the repair fixes a problem the checker found: what the checker learnt that the repair needs
/// (not part of the contract's JSON). Blobs come back through the ingest path (refetch, adopt);
/// bad files go to quarantine/, never deleted.
enum FsckFix: Sendable, Equatable {
    /// The catalog cannot be used (why): set it aside and build a new one from the blobs.
    case rebuildCatalog(String)
    /// The search index disagrees with the catalog (its problems): rebuild it whole.
    case rebuildSearchIndex(String)
    /// The counts kept for `stats` disagree with a recount (the differences): recount.
    case recount(String)
    /// Attachments carry sizes other than their blobs' (the problem): give them their blobs' sizes.
    case resizeAttachments(String)
    /// Attachments name a receipt id other than their receipt row's (the problem): give them its id.
    case reidentifyAttachments(String)
    /// Vault paths others can read (the problem, without advice): take the permissions away.
    case tighten([String], String)
    case recreateZone(String)
    case recreateReceipt(ReceiptID)
    /// The row's encoding or sizes disagree with a good file: record the file as it is.
    case rerecord(BlobID, encoding: BlobEncoding, size: Int64, storedSize: Int64)
    /// A row no receipt refers to whose file is gone: drop the row.
    case dropRow(BlobID)
    /// A referenced blob whose file (or inline bytes) is bad or gone: set the file aside, fetch back.
    case refetch(BlobID, inline: Bool)
    /// Attachments whose blob row is gone: adopt the file, else fetch back.
    case restoreRow(BlobID)
    /// A good file no row records: adopt it as a receipt of zone `recovered`.
    case adoptOrphan(BlobID)
    /// A corrupt or stray file (the problem's path): into quarantine/.
    case quarantine
    /// A staging file no command owns (the problem's path): remove it.
    case removeStaging
}

/// One problem fsck found, with the receipts it affects. `receipt` is the first of `receipts`
/// (the contract's field); `repaired` says whether `--repair` fixed it.
public struct FsckProblem: Codable, Sendable, Equatable {
    public var kind: FsckProblemKind
    public var sha256: String?
    public var receipt: String?
    public var receipts: [String]
    public var path: String?
    public var detail: String
    public var repaired: Bool
    /// What the repair does about it (nil: nothing can be done).
    var fix: FsckFix? = nil

    public init(_ kind: FsckProblemKind, sha256: String? = nil, receipts: [String] = [], path: String? = nil,
                detail: String, repaired: Bool = false) {
        self.init(kind, sha256: sha256, receipts: receipts, path: path, detail: detail, repaired: repaired, fix: nil)
    }

    init(_ kind: FsckProblemKind, sha256: String? = nil, receipts: [String] = [], path: String? = nil,
         detail: String, repaired: Bool = false, fix: FsckFix?) {
        self.kind = kind
        self.sha256 = sha256
        self.receipt = receipts.first
        self.receipts = receipts
        self.path = path
        self.detail = detail
        self.repaired = repaired
        self.fix = fix
    }

    enum CodingKeys: String, CodingKey { case kind, sha256, receipt, receipts, path, detail, repaired }

    public func encode(to encoder: Encoder) throws {
        // Absent values are `null`, not missing keys: the contract's JSON shape.
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(kind, forKey: .kind)
        try c.encode(sha256, forKey: .sha256)
        try c.encode(receipt, forKey: .receipt)
        try c.encode(receipts, forKey: .receipts)
        try c.encode(path, forKey: .path)
        try c.encode(detail, forKey: .detail)
        try c.encode(repaired, forKey: .repaired)
    }
}

public struct FsckReport: Codable, Sendable {
    /// True when no problem is left (every problem found was repaired).
    public var ok: Bool
    public var checkedBlobs: Int
    /// Original bytes re-hashed (inline and external).
    public var checkedBytes: Int64
    public var problems: [FsckProblem]
    public var quick: Bool
    public var repair: Bool
    public var seconds: Double
}

public struct FsckProgress: Sendable {
    public var blobsDone: Int
    public var blobsTotal: Int
    public var bytesDone: Int64
    public var bytesTotal: Int64
}

/// Where `fsck --repair` gets a missing or corrupt blob back from: the sync engine implements it
/// (ReceiptSync) and the fsck command passes it in when the vault has a remote. `fetch` stages the
/// blob in `store` verified against `id` (stage with `expected: id`), encoded as the vault stores
/// blobs, and returns it without installing it — the repair enters it through the ingest path — or
/// nil when the source does not have it.
public protocol BlobRefetcher: Sendable {
    func fetch(_ id: BlobID, into store: BlobStore) async throws -> StagedBlob?
}

public struct FsckOptions: Sendable {
    public var quick: Bool
    public var repair: Bool
    public var refetcher: (any BlobRefetcher)?
    /// Files verified at once (the machine's cores).
    public var workers: Int

    public init(quick: Bool = false, repair: Bool = false, refetcher: (any BlobRefetcher)? = nil,
                workers: Int = max(1, ProcessInfo.processInfo.activeProcessorCount)) {
        self.quick = quick
        self.repair = repair
        self.refetcher = refetcher
        self.workers = workers
    }
}

/// Collects problems and progress from the verifying workers, one at a time.
final class FsckSink: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var problems: [FsckProblem] = []
    private var progress = FsckProgress(blobsDone: 0, blobsTotal: 0, bytesDone: 0, bytesTotal: 0)
    private(set) var checkedBlobs = 0
    private(set) var checkedBytes: Int64 = 0
    private let onProblem: @Sendable (FsckProblem) -> Void
    let onProgress: @Sendable (FsckProgress) -> Void

    init(onProblem: @escaping @Sendable (FsckProblem) -> Void, onProgress: @escaping @Sendable (FsckProgress) -> Void) {
        self.onProblem = onProblem
        self.onProgress = onProgress
    }

    func emit(_ problem: FsckProblem) {
        lock.withLock {
            problems.append(problem)
            onProblem(problem)
        }
    }

    func plan(blobs: Int, bytes: Int64) {
        lock.withLock {
            progress = FsckProgress(blobsDone: 0, blobsTotal: blobs, bytesDone: 0, bytesTotal: bytes)
            onProgress(progress)
        }
    }

    func checked(hashedBytes: Int64, plannedBytes: Int64) {
        lock.withLock {
            checkedBlobs += 1
            checkedBytes += hashedBytes
            progress.blobsDone += 1
            progress.bytesDone += plannedBytes
            onProgress(progress)
        }
    }

    /// Adds the blobs and bytes another sink checked (a check run before a repair).
    func absorbCounts(_ other: FsckSink) {
        let (blobs, bytes) = other.lock.withLock { (other.checkedBlobs, other.checkedBytes) }
        lock.withLock {
            checkedBlobs += blobs
            checkedBytes += bytes
        }
    }

    func countInline(blobs: Int, bytes: Int64) {
        lock.withLock {
            checkedBlobs += blobs
            checkedBytes += bytes
        }
    }
}

/// A blob file to verify: one a row records (`recorded != nil`) or one no row records.
struct VerifyItem: Sendable {
    let id: BlobID
    let path: String
    let recorded: BlobEncoding?
    let size: Int64
    let storedSize: Int64
}

enum VerifyOutcome: Sendable {
    /// Hashes to its address as recorded (or, for a file with no row, as `encoding`).
    case good(VerifiedBlob)
    /// Good bytes, but the row's encoding or sizes disagree with the file.
    case misrecorded(VerifiedBlob, detail: String)
    /// Only its size was checked (`--quick`); encoding unknown for a file with no row.
    case unhashed(storedSize: Int64)
    case missing(String)
    case corrupt(String)
}

/// How many files were being verified at the same moment, at most.
final class PeakCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var active = 0
    private(set) var peak = 0

    func enter() { lock.withLock { active += 1; peak = max(peak, active) } }
    func leave() { lock.withLock { active -= 1 } }
}
