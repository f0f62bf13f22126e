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

    public init(_ kind: FsckProblemKind, sha256: String? = nil, receipts: [String] = [], path: String? = nil,
                detail: String, repaired: Bool = false) {
        self.kind = kind
        self.sha256 = sha256
        self.receipt = receipts.first
        self.receipts = receipts
        self.path = path
        self.detail = detail
        self.repaired = repaired
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
/// (ReceiptSync) and the fsck command passes it in when the vault has a remote. `fetch` must
/// install the blob into `store` verified against `id` (stage with `expected: id`, then install,
/// as every writer does) and return what it installed, or nil when the source does not have it.
public protocol BlobRefetcher: Sendable {
    func fetch(_ id: BlobID, into store: BlobStore) async throws -> StoredBlob?
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
    private let onProgress: @Sendable (FsckProgress) -> Void

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

    func countInline(_ bytes: Int64) {
        lock.withLock {
            checkedBlobs += 1
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
    case good(encoding: BlobEncoding, size: Int64, storedSize: Int64, hashed: Int64)
    /// Good bytes, but the row's encoding or sizes disagree with the file.
    case misrecorded(encoding: BlobEncoding, size: Int64, storedSize: Int64, detail: String)
    /// Only its size was checked (`--quick`); encoding unknown for a file with no row.
    case unhashed(storedSize: Int64)
    case missing(String)
    case corrupt(String)
}

/// Hands out indexes to the workers, and remembers how many were verifying at once.
final class WorkCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var next = 0
    private var active = 0
    private(set) var peak = 0
    private let count: Int
    init(_ count: Int) { self.count = count }
    func take() -> Int? {
        lock.withLock {
            guard next < count else { return nil }
            defer { next += 1 }
            active += 1
            peak = max(peak, active)
            return next
        }
    }
    func finished() { lock.withLock { active -= 1 } }
}

final class OutcomeTable: @unchecked Sendable {
    private let lock = NSLock()
    private var outcomes: [VerifyOutcome?]
    init(_ count: Int) { outcomes = Array(repeating: nil, count: count) }
    func set(_ i: Int, _ o: VerifyOutcome) { lock.withLock { outcomes[i] = o } }
    var all: [VerifyOutcome?] { lock.withLock { outcomes } }
}

extension Vault {
    /// Checks the vault at `path` (docs/DESIGN.md, "fsck"): SQLite's integrity_check and
    /// foreign_key_check, every blob row against its file (present, regular, sizes, and unless
    /// `quick` re-hashed through decompression), inline blobs re-hashed, files no row records,
    /// stray files and staging files no running command owns. Problems stream to `onProblem` as
    /// they are found (with `repair`: once their repair was tried). Works on a vault whose catalog
    /// cannot be read (reporting it, or with `repair` rebuilding it); refuses a newer catalog.
    public static func fsck(at path: String, options: FsckOptions = FsckOptions(),
                            onProblem: @escaping @Sendable (FsckProblem) -> Void = { _ in },
                            progress: @escaping @Sendable (FsckProgress) -> Void = { _ in }) async throws -> FsckReport {
        let started = realtimeNanoseconds()
        let catalogPath = FileSystem.join(path, Catalog.fileName)
        let store = BlobStore(root: path)
        let sink = FsckSink(onProblem: onProblem, onProgress: progress)
        var trouble: String?
        do {
            try Catalog.inspect(catalogPath)
        } catch let error as CatalogError {
            switch error.code {
            case .newerSchema:
                throw VaultError(.unusableVault, error.description)
            case .absent:
                guard FileSystem.exists(store.blobsPath) else { throw VaultError(.unusableVault, error.description) }
                trouble = "the catalog \(catalogPath) is missing"
            case .unreadable:
                trouble = "the catalog \(catalogPath) cannot be read (\(error.detail))"
            }
        }
        // Repair changes files: it excludes every writer and gc. A check only keeps gc away (so no
        // row or file vanishes under it) and lets imports run; what they add meanwhile is re-checked.
        let lock: VaultLock?
        do {
            lock = try VaultLock(vaultPath: path, mode: options.repair ? .exclusive : .shared)
        } catch let error as IOError where error.errno == EROFS && !options.repair {
            lock = nil  // a read-only file system: nothing can change under the check, no lock needed
        } catch {
            throw VaultError.wrap(error)
        }
        defer { withExtendedLifetime(lock) {} }

        var vault: Vault?
        if trouble == nil {
            do {
                let opened = try Vault.open(at: path)
                vault = opened
                let damage = try opened.catalog.read { db in
                    try String.fetchAll(db, sql: "PRAGMA integrity_check").filter { $0 != "ok" }
                }
                if !damage.isEmpty {
                    trouble = "the catalog \(catalogPath) fails SQLite's integrity check: "
                        + damage.prefix(3).joined(separator: "; ") + (damage.count > 3 ? " (and \(damage.count - 3) more)" : "")
                }
            } catch {
                trouble = "the catalog \(catalogPath) cannot be read (\(VaultError.wrap(error)))"
            }
        }
        if let problem = trouble {
            try? vault?.close()
            vault = nil
            if options.repair {
                let summary = try await rebuildCatalog(vaultPath: path, store: store, options: options, sink: sink)
                sink.emit(FsckProblem(.catalog, path: catalogPath, detail: problem + "; " + summary, repaired: true))
                do { vault = try Vault.open(at: path) } catch { throw VaultError.wrap(error) }
            } else {
                sink.emit(FsckProblem(.catalog, path: catalogPath,
                                      detail: problem + ": run `receipt fsck --repair` to rebuild it from the blobs"))
                try await checkFilesWithoutCatalog(store, options: options, sink: sink)
            }
        }
        if let vault {
            defer { try? vault.close() }
            do {
                try await vault.checkInvariants(options, sink: sink)
                try vault.checkSearchIndex(repair: options.repair, sink: sink)
            } catch let error as CancellationError {
                throw error
            } catch {
                throw VaultError.wrap(error)
            }
        }
        let problems = sink.problems
        return FsckReport(ok: problems.allSatisfy(\.repaired), checkedBlobs: sink.checkedBlobs,
                          checkedBytes: sink.checkedBytes, problems: problems, quick: options.quick,
                          repair: options.repair,
                          seconds: Double(realtimeNanoseconds() - started) / 1e9)
    }

    /// Verifies `items` on `workers` tasks at once (different files on different cores).
    /// `onOutcome` hears of each file as soon as it is verified (from the worker that did it).
    static func verifyAll(_ items: [VerifyItem], store: BlobStore, quick: Bool, workers: Int, sink: FsckSink,
                          onOutcome: @escaping @Sendable (VerifyItem, VerifyOutcome) -> Void = { _, _ in }) async -> [VerifyOutcome] {
        await verifyAllCounting(items, store: store, quick: quick, workers: workers, sink: sink, onOutcome: onOutcome).outcomes
    }

    /// `verifyAll`, also saying how many files were being verified at the same moment at most.
    static func verifyAllCounting(_ items: [VerifyItem], store: BlobStore, quick: Bool, workers: Int, sink: FsckSink,
                                  onOutcome: @escaping @Sendable (VerifyItem, VerifyOutcome) -> Void = { _, _ in })
        async -> (outcomes: [VerifyOutcome], peak: Int) {
        let counter = WorkCounter(items.count)
        let table = OutcomeTable(items.count)
        sink.plan(blobs: items.count, bytes: items.reduce(0) { $0 + $1.storedSize })
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<max(1, min(workers, items.count)) {
                group.addTask {
                    while let i = counter.take() {
                        let outcome = verify(items[i], store: store, quick: quick)
                        table.set(i, outcome)
                        onOutcome(items[i], outcome)
                        var hashed: Int64 = 0
                        if case .good(_, _, _, let n) = outcome { hashed = n }
                        if case .misrecorded(_, let n, _, _) = outcome { hashed = n }
                        counter.finished()
                        sink.checked(hashedBytes: hashed, plannedBytes: items[i].storedSize)
                    }
                }
            }
        }
        return (table.all.map { $0 ?? .corrupt("was not checked") }, counter.peak)
    }

    /// One file: present and regular; with a row and `quick`, its size; otherwise re-hashed through
    /// decompression (the recorded encoding first, then the other).
    static func verify(_ item: VerifyItem, store: BlobStore, quick: Bool) -> VerifyOutcome {
        let st: FileStatus?
        do { st = try FileSystem.status(item.path) } catch { return .corrupt("cannot be examined: \(error)") }
        guard let st else { return .missing("no file at \(item.path)") }
        guard st.isRegular else { return .missing("\(item.path) is not a regular file") }
        if quick {
            if item.recorded == nil || st.size == item.storedSize { return .unhashed(storedSize: st.size) }
        }
        var order: [BlobEncoding] = [.identity, .xz]
        if let recorded = item.recorded { order = [recorded] + order.filter { $0 != recorded } }
        var firstDetail: String?
        for encoding in order {
            do {
                let size = try store.verify(item.id, encoding: encoding)
                guard let recorded = item.recorded else {
                    return .good(encoding: encoding, size: size, storedSize: st.size, hashed: size)
                }
                if encoding != recorded || size != item.size || st.size != item.storedSize {
                    return .misrecorded(encoding: encoding, size: size, storedSize: st.size, detail:
                        "the catalog records it as \(recorded.rawValue), \(item.size) bytes (\(item.storedSize) stored); "
                        + "the file is \(encoding.rawValue), \(size) bytes (\(st.size) stored)")
                }
                return .good(encoding: encoding, size: size, storedSize: st.size, hashed: size)
            } catch BlobError.corrupt(_, let detail) {
                firstDetail = firstDetail ?? detail
                continue
            } catch BlobError.missing {
                return .missing("no file at \(item.path)")
            } catch {
                return .corrupt("cannot be read: \(VaultError.wrap(error))")
            }
        }
        return .corrupt(firstDetail ?? "it does not hash to its address")
    }

    /// With no usable catalog: the blob files themselves (named by their hash, decodable) and the
    /// staging and stray files.
    static func checkFilesWithoutCatalog(_ store: BlobStore, options: FsckOptions, sink: FsckSink) async throws {
        let files: [BlobFile]
        do { files = try store.enumerate() } catch { throw VaultError.wrap(error) }
        let items = files.compactMap { f in f.id.map { VerifyItem(id: $0, path: f.path, recorded: nil, size: f.storedSize, storedSize: f.storedSize) } }
        let outcomes = await verifyAll(items, store: store, quick: options.quick, workers: options.workers, sink: sink)
        for (item, outcome) in zip(items, outcomes) {
            switch outcome {
            case .corrupt(let detail), .missing(let detail):
                sink.emit(FsckProblem(.corruptBlob, sha256: item.id.hex, path: item.path, detail: "blob \(item.id) \(detail)"))
            default: break
            }
        }
        for file in files where file.id == nil {
            sink.emit(FsckProblem(.unknownFile, path: file.path, detail: "\(file.path) is not a blob file (its name or place is not a blob's)"))
        }
        try reportInterim(store, repair: false, sink: sink)
    }

    /// Staging files no running command owns (stale) and anything under interim/ that is not a file.
    static func reportInterim(_ store: BlobStore, repair: Bool, sink: FsckSink) throws {
        let first: [InterimFile]
        do { first = try store.interimFiles() } catch { throw VaultError.wrap(error) }
        let suspects = first.filter { !$0.owned }
        guard !suspects.isEmpty else { return }
        // A staging file is locked right after it is created: look again before calling it stale.
        let again = Dictionary((try? store.interimFiles())?.map { ($0.path, $0) } ?? [], uniquingKeysWith: { a, _ in a })
        for file in suspects {
            guard let now = again[file.path], !now.owned, let st = try? FileSystem.status(file.path) else { continue }
            if !st.isRegular {
                var problem = FsckProblem(.unknownFile, path: file.path, detail: "\(file.path) is not a staging file")
                if repair {
                    do {
                        let target = try store.quarantine(file.path)
                        problem.repaired = true
                        problem.detail += "; moved to \(target)"
                    } catch { problem.detail += "; could not be moved to quarantine: \(VaultError.wrap(error))" }
                }
                sink.emit(problem)
                continue
            }
            var problem = FsckProblem(.staleInterim, path: file.path,
                                      detail: "staging file \(file.path) (\(st.size) bytes) is owned by no running command")
            if repair {
                do {
                    try FileSystem.remove(file.path)
                    problem.repaired = true
                    problem.detail += "; removed"
                } catch { problem.detail += "; could not be removed: \(VaultError.wrap(error))" }
            }
            sink.emit(problem)
        }
        if repair { try? FileSystem.syncDirectory(store.interimPath) }
    }

    // MARK: - The invariants, on a readable catalog

    /// A blob row as fsck needs it.
    struct RowInfo {
        let id: BlobID
        let size: Int64
        let storedSize: Int64
        let encoding: BlobEncoding
        let inline: Bool
    }

    func checkInvariants(_ options: FsckOptions, sink: FsckSink) async throws {
        let repair = options.repair
        // Files before the catalog: an import installs before it commits, so a file listed here has
        // its row in the snapshot below or committed later (which the re-check at the end catches).
        let files = try blobs.enumerate()
        struct Snapshot {
            var rows: [RowInfo] = []
            var badRows: [(String, String)] = []
            var refs: [String: [String]] = [:]
            var dangling: [String: [String]] = [:]
            var foreignKeys: [(table: String, rowid: Int64?, parent: String)] = []
        }
        let snap = try catalog.read { db -> Snapshot in
            var s = Snapshot()
            let rows = try Row.fetchCursor(db, sql: "SELECT sha256, size, storedSize, encoding, inline IS NOT NULL FROM blobs")
            while let row = try rows.next() {
                let sha: String = row[0]
                let encodingText: String = row[3]
                guard let id = BlobID(hex: sha), let encoding = BlobEncoding(rawValue: encodingText) else {
                    s.badRows.append((sha, encodingText))
                    continue
                }
                s.rows.append(RowInfo(id: id, size: row[1], storedSize: row[2], encoding: encoding, inline: row[4]))
            }
            let refs = try Row.fetchCursor(db, sql: "SELECT sha256, receiptID FROM attachments ORDER BY sha256, position, receiptID")
            while let row = try refs.next() { s.refs[row[0], default: []].append(row[1]) }
            let dangling = try Row.fetchCursor(db, sql: """
                SELECT a.sha256, a.receiptID FROM attachments a
                WHERE NOT EXISTS (SELECT 1 FROM blobs b WHERE b.sha256 = a.sha256) ORDER BY a.sha256, a.receiptID
                """)
            while let row = try dangling.next() { s.dangling[row[0], default: []].append(row[1]) }
            for row in try Row.fetchAll(db, sql: "PRAGMA foreign_key_check") {
                let table: String = row[0]
                let parent: String = row[2]
                if table == "attachments" && parent == "blobs" { continue }  // reported as missing blobs
                s.foreignKeys.append((table, row[1], parent))
            }
            return s
        }
        func receipts(_ id: String) -> [String] { snap.refs[id] ?? [] }

        for (sha, encoding) in snap.badRows {
            sink.emit(FsckProblem(.catalog, sha256: sha, receipts: receipts(sha),
                                  detail: "the catalog holds a blob row with address '\(sha)' and encoding '\(encoding)', which are not valid"))
        }
        try await checkForeignKeys(snap.foreignKeys, repair: repair, sink: sink)

        // Inline blobs: re-hashed from the catalog, one pass.
        var corruptInline: [(BlobID, String)] = []
        try catalog.read { db in
            let rows = try Row.fetchCursor(db, sql: "SELECT sha256, size, inline FROM blobs WHERE inline IS NOT NULL")
            while let row = try rows.next() {
                let sha: String = row[0]
                let size: Int64 = row[1]
                let bytes: [UInt8] = (row[2] as Data?).map { [UInt8]($0) } ?? []
                guard let id = BlobID(hex: sha) else { continue }
                let actual = SHA256Hasher.hash(bytes)
                sink.countInline(Int64(bytes.count))
                if actual != id || Int64(bytes.count) != size {
                    corruptInline.append((id, "its inline bytes (\(bytes.count), catalog says \(size)) hash to \(actual)"))
                }
            }
        }
        for (id, detail) in corruptInline {
            var problem = FsckProblem(.corruptBlob, sha256: id.hex, receipts: receipts(id.hex), path: catalog.path,
                                      detail: "inline blob \(id) is corrupt: \(detail)")
            if repair, let stored = await refetch(id, options) {
                try catalog.transaction { w in
                    try w.rerecordBlob(id, size: nil, storedSize: stored.storedSize, encoding: stored.encoding)
                }
                problem.repaired = true
                problem.detail += "; fetched back from the sync server"
            } else if repair {
                problem.detail += "; no sync server could give it back"
            }
            sink.emit(problem)
        }

        // External blobs and files no row records, verified two (or `workers`) at a time.
        let known = Set(snap.rows.map(\.id))
        var items: [VerifyItem] = []
        for row in snap.rows where !row.inline {
            items.append(VerifyItem(id: row.id, path: blobs.path(for: row.id), recorded: row.encoding,
                                    size: row.size, storedSize: row.storedSize))
        }
        for file in files {
            guard let id = file.id, !known.contains(id) else { continue }
            items.append(VerifyItem(id: id, path: file.path, recorded: nil, size: file.storedSize, storedSize: file.storedSize))
        }
        items.sort { $0.storedSize > $1.storedSize }  // largest first: the workers finish together
        // Without --repair, a row's problem is reported the moment its file is verified; with it,
        // once its repair was tried.
        let refsByBlob = snap.refs
        let outcomes = await Self.verifyAll(items, store: blobs, quick: options.quick, workers: options.workers, sink: sink) { item, outcome in
            guard !repair, item.recorded != nil,
                  let problem = Self.rowProblem(item, outcome, refs: refsByBlob[item.id.hex] ?? []) else { return }
            sink.emit(problem)
        }

        var orphans: [(VerifyItem, VerifyOutcome)] = []
        for (item, outcome) in zip(items, outcomes) {
            let refs = receipts(item.id.hex)
            if item.recorded == nil {
                orphans.append((item, outcome))
                continue
            }
            guard repair, var problem = Self.rowProblem(item, outcome, refs: refs) else { continue }
            switch outcome {
            case .good, .unhashed:
                continue
            case .misrecorded(let encoding, let size, let storedSize, _):
                try catalog.transaction { w in
                    try w.rerecordBlob(item.id, size: size, storedSize: storedSize, encoding: encoding)
                }
                problem.repaired = true
                problem.detail += "; the catalog now records the file as it is"
            case .missing where refs.isEmpty:
                if !FileSystem.exists(item.path) {
                    try catalog.transaction { w in try w.deleteBlobIfUnreferenced(item.id) }
                    problem.repaired = true
                    problem.detail += "; its row was removed"
                }
            case .missing, .corrupt:
                try await refetchInto(&problem, item.id, options, movingAside: item.path)
            }
            sink.emit(problem)
        }

        // Attachments whose blob row is absent.
        for (sha, refs) in snap.dangling.sorted(by: { $0.key < $1.key }) {
            guard let id = BlobID(hex: sha) else { continue }
            var problem = FsckProblem(.missingBlob, sha256: sha, receipts: refs, path: blobs.path(for: id),
                                      detail: "blob \(sha) of \(refs.count) receipt(s) has no row in the catalog")
            if repair {
                if (try? blobs.detectEncoding(id)) != nil, (try? blobs.storedSize(of: id)) != nil {
                    try ingestOnce([.adopted(id)]) { _, _ in }
                    problem.repaired = true
                    problem.detail += "; its file is good and is recorded again"
                } else if let stored = await refetch(id, options) {
                    try catalog.transaction { w in
                        try w.insertBlob(NewBlob(external: id, size: stored.size, storedSize: stored.storedSize,
                                                 encoding: stored.encoding))
                    }
                    problem.repaired = true
                    problem.detail += "; fetched back from the sync server"
                } else {
                    problem.detail += "; no file and no sync server could give it back (the receipt is kept)"
                }
            }
            sink.emit(problem)
        }

        // Files no row records: confirm (an import running meanwhile may have committed), then report.
        let stillOrphans: Set<BlobID> = repair ? Set(orphans.map(\.0.id)) : try catalog.read { db in
            var out = Set<BlobID>()
            for (item, _) in orphans where try !BlobRecord.exists(db, key: item.id.hex) { out.insert(item.id) }
            return out
        }
        for (item, outcome) in orphans where stillOrphans.contains(item.id) && FileSystem.exists(item.path) {
            if snap.dangling[item.id.hex] != nil { continue }  // handled above with its receipts
            switch outcome {
            case .corrupt(let detail), .missing(let detail):
                var problem = FsckProblem(.corruptBlob, sha256: item.id.hex, path: item.path,
                                          detail: "blob file \(item.path), which no row records, is corrupt: \(detail)")
                if repair { quarantineInto(&problem, item.path) }
                sink.emit(problem)
            case .good, .unhashed, .misrecorded:
                var problem = FsckProblem(.orphanBlob, sha256: item.id.hex, path: item.path,
                                          detail: "blob file \(item.path) is recorded by no catalog row (left by an interrupted import)")
                if repair {
                    if (try? blobs.detectEncoding(item.id)) != nil {
                        let receipt = try adoptIntoRecovered([item.id])
                        problem.receipts = receipt
                        problem.receipt = receipt.first
                        problem.repaired = true
                        problem.detail += "; kept as an attachment of receipt \(receipt.first ?? "?") in zone '\(Zone.recovered)'"
                    } else {
                        problem.kind = .corruptBlob
                        quarantineInto(&problem, item.path)
                    }
                }
                sink.emit(problem)
            }
        }

        // Stray files under blobs/.
        for file in files where file.id == nil && FileSystem.exists(file.path) {
            var problem = FsckProblem(.unknownFile, path: file.path,
                                      detail: "\(file.path) is not a blob file (its name, place or type is not a blob's)")
            if repair { quarantineInto(&problem, file.path, repairedByMove: true) }
            sink.emit(problem)
        }
        try Self.reportInterim(blobs, repair: repair, sink: sink)
    }

    /// The problem a verified row shows, before any repair; nil when it is fine.
    static func rowProblem(_ item: VerifyItem, _ outcome: VerifyOutcome, refs: [String]) -> FsckProblem? {
        switch outcome {
        case .good, .unhashed:
            return nil
        case .misrecorded(_, _, _, let detail):
            return FsckProblem(.catalog, sha256: item.id.hex, receipts: refs, path: item.path, detail: "blob \(item.id): \(detail)")
        case .missing(let detail) where refs.isEmpty:
            // A row for bytes that are gone, that nothing refers to: dropping it loses nothing.
            return FsckProblem(.orphanBlob, sha256: item.id.hex, path: item.path,
                               detail: "the catalog records blob \(item.id), which no receipt refers to and whose file is gone (\(detail))")
        case .missing(let detail):
            return FsckProblem(.missingBlob, sha256: item.id.hex, receipts: refs, path: item.path,
                               detail: "blob \(item.id) of \(refs.count) receipt(s) is missing: \(detail)")
        case .corrupt(let detail):
            return FsckProblem(.corruptBlob, sha256: item.id.hex, receipts: refs, path: item.path,
                               detail: "blob \(item.id) is corrupt: \(detail)")
        }
    }

    /// Foreign keys other than attachment → blob (which are missing blobs).
    func checkForeignKeys(_ rows: [(table: String, rowid: Int64?, parent: String)], repair: Bool, sink: FsckSink) async throws {
        guard !rows.isEmpty else { return }
        // Receipts in a zone the catalog lost: recreate the zone. Attachments of a receipt the catalog
        // lost: recreate the receipt in zone `recovered`. Nothing is deleted.
        let missingZones = try catalog.read { db in
            try String.fetchAll(db, sql: "SELECT DISTINCT zone FROM receipts WHERE zone NOT IN (SELECT name FROM zones)")
        }
        let missingReceipts = try catalog.read { db in
            try String.fetchAll(db, sql: "SELECT DISTINCT receiptID FROM attachments WHERE receiptID NOT IN (SELECT id FROM receipts)")
        }
        for zone in missingZones {
            var problem = FsckProblem(.catalog, detail: "receipts of zone '\(zone)' refer to a zone the catalog does not have")
            if repair {
                try catalog.write { db in try Zone(name: zone, createdAt: nowMillis()).insert(db, onConflict: .ignore) }
                problem.repaired = true
                problem.detail += "; the zone was recreated"
            }
            sink.emit(problem)
        }
        for receipt in missingReceipts {
            var problem = FsckProblem(.catalog, receipts: [receipt],
                                      detail: "attachments refer to receipt \(receipt), which the catalog does not have")
            if repair && receipt.count == 36 {
                try catalog.write { db in
                    try ensureRecoveredZone(db)
                    let now = nowMillis()
                    try Receipt(id: receipt, zone: Zone.recovered, note: Self.recoveredNote, createdAt: now, modifiedAt: now)
                        .insert(db, onConflict: .ignore)
                    try recordChange(db, receipt, zone: Zone.recovered, .upsert)
                }
                problem.repaired = true
                problem.detail += "; the receipt was recreated in zone '\(Zone.recovered)'"
            }
            sink.emit(problem)
        }
        let other = rows.filter { !($0.table == "receipts" && $0.parent == "zones") && !($0.table == "attachments" && $0.parent == "receipts") }
        for row in other {
            sink.emit(FsckProblem(.catalog, detail: "row \(row.rowid.map(String.init) ?? "?") of \(row.table) refers to a missing row of \(row.parent)"))
        }
    }

    static let recoveredNote = "recovered by `receipt fsck --repair`: the catalog had lost this receipt's record"

    /// Moves a bad file into quarantine/ (never deleting it), recording where in the problem.
    func quarantineInto(_ problem: inout FsckProblem, _ path: String, repairedByMove: Bool = true) {
        do {
            let target = try blobs.quarantine(path)
            problem.repaired = repairedByMove
            problem.detail += "; moved to \(target)"
        } catch {
            problem.detail += "; could not be moved to quarantine: \(VaultError.wrap(error))"
        }
    }

    /// A referenced blob that is corrupt or missing: set the bad file aside, then fetch the blob back
    /// from the sync server when there is one.
    func refetchInto(_ problem: inout FsckProblem, _ id: BlobID, _ options: FsckOptions, movingAside path: String) async throws {
        if FileSystem.exists(path) {
            quarantineInto(&problem, path, repairedByMove: false)
        }
        if let stored = await refetch(id, options) {
            try catalog.transaction { w in
                try w.rerecordBlob(id, size: stored.size, storedSize: stored.storedSize, encoding: stored.encoding)
            }
            problem.repaired = true
            problem.detail += "; fetched back from the sync server"
        } else {
            problem.detail += options.refetcher == nil
                ? "; no sync server is set to fetch it back from" : "; the sync server could not give it back"
        }
    }

    func refetch(_ id: BlobID, _ options: FsckOptions) async -> StoredBlob? {
        guard let refetcher = options.refetcher else { return nil }
        guard let stored = try? await refetcher.fetch(id, into: blobs), stored.id == id else { return nil }
        // Trust nothing fetched: it must verify here, as installed.
        guard (try? blobs.verify(id, encoding: stored.encoding)) != nil else { return nil }
        return stored
    }

    /// Records good blob files no row described and makes each an attachment of a new receipt in
    /// zone `recovered`. Returns the receipts' ids.
    func adoptIntoRecovered(_ files: [BlobID]) throws -> [String] {
        try ingestOnce(files.sorted().map { .adopted($0) }) { w, adopted in
            try ensureRecoveredZone(w.db)
            return try adopted.map { try Self.insertRecoveredReceipt(w, $0.id, mediaType: $0.mediaType) }
        }
    }

    func ensureRecoveredZone(_ db: Database) throws {
        try Zone(name: Zone.recovered, createdAt: nowMillis()).insert(db, onConflict: .ignore)
    }

    static func insertRecoveredReceipt(_ w: CatalogWriter, _ id: BlobID, mediaType: String) throws -> String {
        let (db, now) = (w.db, w.now)
        let receipt = Receipt(id: UUID().uuidString.lowercased(), zone: Zone.recovered,
                              note: "recovered by `receipt fsck --repair`: blob \(id.hex) was in the vault without a catalog record",
                              createdAt: now, modifiedAt: now)
        try receipt.insert(db)
        try Attachment(receiptID: receipt.id, sha256: id.hex, filename: "recovered-\(id.hex.prefix(12))" + fileExtension(mediaType),
                       mediaType: mediaType, position: 0).insert(db)
        try w.recordChange(receipt.id, zone: Zone.recovered, .upsert)
        return receipt.id
    }

    static func fileExtension(_ mediaType: String) -> String {
        switch mediaType {
        case "application/pdf": return ".pdf"
        case "image/jpeg": return ".jpg"
        case "image/png": return ".png"
        case "image/tiff": return ".tiff"
        case "image/heic": return ".heic"
        case "image/gif": return ".gif"
        case "image/webp": return ".webp"
        case "text/plain": return ".txt"
        case "text/csv": return ".csv"
        case "application/json": return ".json"
        default: return ""
        }
    }

    struct EnoughBytes: Error {}

    /// The media type of a blob from its first 4 KiB of original bytes.
    static func sniffMediaType(_ store: BlobStore, _ id: BlobID, _ encoding: BlobEncoding) throws -> String {
        var head: [UInt8] = []
        do {
            try store.read(id, encoding: encoding) { piece in
                head += piece.prefix(4096 - head.count)
                if head.count >= 4096 { throw EnoughBytes() }
            }
        } catch is EnoughBytes {}
        return head.withUnsafeBytes { MediaType.of(head: $0, filename: "") }
    }
}
