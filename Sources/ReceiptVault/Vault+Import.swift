import BlobStore
import Foundation
import GRDB
import ReceiptCatalog

public struct ImportedFile: Codable, Sendable, Equatable {
    public var id: String
    public var path: String
    public var sha256: String
    public var size: Int64
    /// The blob was already in the vault: no new bytes were stored.
    public var deduplicated: Bool
    /// The same file (name and content) was already a receipt of this zone: nothing was added.
    public var existing: Bool
}

public struct FailedFile: Codable, Sendable, Equatable {
    public var path: String
    public var error: String
}

public struct ImportReport: Codable, Sendable, Equatable {
    public var imported: [ImportedFile] = []
    public var failed: [FailedFile] = []

    public init(imported: [ImportedFile] = [], failed: [FailedFile] = []) {
        self.imported = imported
        self.failed = failed
    }
}

/// Counters for a progress display.
public struct ImportProgress: Sendable {
    public var filesDone: Int
    public var filesTotal: Int
    public var bytesDone: Int64
    public var bytesTotal: Int64
}

/// How much one import batch may gather before it is flushed and committed. Fewer, larger batches
/// mean fewer flushes (two syncfs and one SQLite commit each); the limits keep resources bounded.
struct BatchBudget {
    /// Each staged file stays open and locked until the batch is installed.
    static let stagedFilesLimit = 256
    /// Staged bytes wait in interim/ (on disk, not in memory) until the batch is installed.
    static let stagedBytesLimit: Int64 = 1 << 30
    /// Small files are held in memory until their rows commit: 32 MiB for one batch at a time, half
    /// that where two are in flight (a folder import stages one while the one before it commits).
    let inlineBytesLimit: Int64
    /// Rows of one transaction.
    static let rowsLimit = 16384

    init(inlineBytesLimit: Int64 = 32 << 20) {
        self.inlineBytesLimit = inlineBytesLimit
    }

    private var rows = 0
    private var staged = 0
    private var stagedBytes: Int64 = 0
    private var inlineBytes: Int64 = 0

    mutating func add(size: Int64, inline: Bool) {
        rows += 1
        if inline {
            inlineBytes += size
        } else {
            staged += 1
            stagedBytes += size
        }
    }

    var isFull: Bool {
        rows >= Self.rowsLimit || staged >= Self.stagedFilesLimit || stagedBytes >= Self.stagedBytesLimit
            || inlineBytes >= inlineBytesLimit
    }
}

/// A regular file found for import.
struct InputFile: Sendable {
    let path: String
    let status: FileStatus
    var name: String { path.split(separator: "/").last.map(String.init) ?? path }
}

/// A file's content made ready to reference: either small bytes for the catalog, or a staged blob.
struct PreparedBlob: Sendable {
    let id: BlobID
    let size: Int64
    let mediaType: String
    let inline: [UInt8]?
    let staged: StagedBlob?
    /// Known from the stat cache: the catalog already holds this blob.
    let cached: Bool
}

/// The files of one import batch, ready to commit. Staging files it still holds are dropped when it
/// goes (after an install they are gone already).
final class PreparedBatch: @unchecked Sendable {
    var files: [(InputFile, PreparedBlob)] = []
    private let blobs: BlobStore

    init(blobs: BlobStore) {
        self.blobs = blobs
    }

    deinit {
        for (_, blob) in files { if let staged = blob.staged { blobs.discard(staged) } }
    }
}

extension Vault {

    /// Imports each file as one receipt; folders are walked (symbolic links, FIFOs, sockets and devices
    /// inside them are skipped and reported). Paths named explicitly must exist and be readable
    /// regular files or folders, else nothing is imported. A file whose name and content are already
    /// a receipt of the zone is reported as `existing` and not added again.
    public func importFiles(_ paths: [String], zone: String = Zone.personal, metadata: ReceiptMetadata = ReceiptMetadata(),
                            progress: ((ImportProgress) -> Void)? = nil) throws -> ImportReport {
        let metadata = try metadata.validated()
        try wrapped { try catalog.read { db in try requireWritable(db, zone) } }
        var report = ImportReport()
        let inputs = try collectInputs(paths, skipped: &report.failed)
        var tally = ImportProgress(filesDone: 0, filesTotal: inputs.count, bytesDone: 0,
                                   bytesTotal: inputs.reduce(0) { $0 + $1.status.size })
        try wrapped {
            try locked(.shared) {
                // While one batch is flushed and committed on a thread of its own, the next is staged;
                // batches commit strictly in order.
                var committing: Parallel.Background<Result<[ImportedFile], Error>>?
                defer { _ = committing?.wait() }
                var start = inputs.startIndex
                while start < inputs.endIndex {
                    var end = start
                    var bytes: Int64 = 0
                    var budget = BatchBudget(inlineBytesLimit: 16 << 20)
                    while end < inputs.endIndex && !budget.isFull {
                        budget.add(size: inputs[end].status.size, inline: inputs[end].status.size < settings.inlineThreshold)
                        bytes += inputs[end].status.size
                        end += 1
                    }
                    let prepared = try prepareBatch(inputs[start..<end], failed: &report.failed)
                    if let previous = committing { report.imported += try previous.wait().get() }
                    committing = Parallel.Background { Result { try self.commitBatch(prepared, zone: zone, metadata: metadata) } }
                    tally.filesDone = end
                    tally.bytesDone += bytes
                    progress?(tally)
                    start = end
                }
                if let last = committing { report.imported += try last.wait().get() }
            }
        }
        return report
    }

    /// Stages or reads the files of a batch on every core; unreadable files are reported in `failed`.
    private func prepareBatch(_ batch: ArraySlice<InputFile>, failed: inout [FailedFile]) throws -> PreparedBatch {
        // Two threads per core: staging writes go straight to the device (direct I/O) and wait for it,
        // and the other thread of the core hashes meanwhile.
        let outcomes = Parallel.mapLargestFirst(Array(batch), workers: 2 * Parallel.cores, cost: \.status.size) { input in try self.prepare(input) }
        let prepared = PreparedBatch(blobs: blobs)
        var firstError: Error?
        for (input, outcome) in zip(batch, outcomes) {
            switch outcome {
            case .success(let blob): prepared.files.append((input, blob))
            case .failure(let error as IOError):
                failed.append(FailedFile(path: input.path, error: error.description))
            case .failure(let error): firstError = firstError ?? error
            }
        }
        if let firstError { throw firstError }
        return prepared
    }

    /// Installs the batch's staged blobs durably, then commits its rows in one transaction.
    private func commitBatch(_ batch: PreparedBatch, zone: String, metadata: ReceiptMetadata) throws -> [ImportedFile] {
        let installed = try installStaged(batch.files.map(\.1))
        let now = nowMillis()
        return try catalog.write { db in
            var out: [ImportedFile] = []
            for (input, blob) in batch.files {
                let known = try recordBlob(db, blob, installed: installed[blob.id], at: now)
                if let existing = try receiptHolding(db, blob.id, named: input.name, in: zone) {
                    out.append(ImportedFile(id: existing, path: input.path, sha256: blob.id.hex, size: blob.size,
                                            deduplicated: true, existing: true))
                    continue
                }
                var receipt = Receipt(id: UUID().uuidString.lowercased(), zone: zone, createdAt: now, modifiedAt: now)
                metadata.apply(to: &receipt)
                try receipt.insert(db)
                try Attachment(receiptID: receipt.id, sha256: blob.id.hex, filename: input.name,
                               mediaType: blob.mediaType, position: 0).insert(db)
                try recordChange(db, receipt.id, zone: zone, .upsert)
                try rememberInCache(db, input, blob.id)
                out.append(ImportedFile(id: receipt.id, path: input.path, sha256: blob.id.hex, size: blob.size,
                                        deduplicated: known, existing: false))
            }
            return out
        }
    }

    /// Reads one file: from the stat cache when unchanged, else hashed (small ones kept in memory for
    /// the catalog, larger ones staged under interim/).
    func prepare(_ input: InputFile) throws -> PreparedBlob {
        try FileDescriptor.with(input.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK) { fd in
            let st = try fd.stat()
            guard st.isRegular else { throw IOError("reading", path: input.path, errno: EINVAL) }
            var head = [UInt8](repeating: 0, count: 4096)
            let headCount = try head.withUnsafeMutableBytes { try fd.readFully(into: $0) }
            let mediaType = head.withUnsafeBytes {
                MediaType.of(head: UnsafeRawBufferPointer(rebasing: $0[..<headCount]), filename: input.name)
            }
            if let cached = try cachedBlob(input, st) {
                return PreparedBlob(id: cached, size: st.size, mediaType: mediaType, inline: nil, staged: nil, cached: true)
            }
            try fd.seek(to: 0)
            if st.size < settings.inlineThreshold {
                var bytes = [UInt8](repeating: 0, count: Int(st.size) + 1)
                let n = try bytes.withUnsafeMutableBytes { try fd.readFully(into: $0) }
                if n <= st.size {
                    bytes.removeLast(bytes.count - n)
                    return PreparedBlob(id: SHA256Hasher.hash(bytes), size: Int64(n), mediaType: mediaType,
                                        inline: bytes, staged: nil, cached: false)
                }
                try fd.seek(to: 0)  // the file grew while we read it: stage it as a large one
            }
            let staged = try blobs.stage(from: fd, compression: settings.compression)
            return PreparedBlob(id: staged.id, size: staged.size, mediaType: mediaType, inline: nil, staged: staged, cached: false)
        }
    }

    /// Installs the staged blobs of a batch (renames, one fsync per folder); nothing is referenced yet.
    func installStaged(_ blobsToInstall: [PreparedBlob]) throws -> [BlobID: StoredBlob] {
        let staged = blobsToInstall.compactMap(\.staged)
        guard !staged.isEmpty else { return [:] }
        var map: [BlobID: StoredBlob] = [:]
        for stored in try blobs.install(staged) { map[stored.id] = map[stored.id] ?? stored }
        return map
    }

    /// Inserts the blob's row unless present; returns whether the vault already had it.
    func recordBlob(_ db: Database, _ blob: PreparedBlob, installed: StoredBlob?, at now: Millis) throws -> Bool {
        if try BlobRecord.exists(db, key: blob.id.hex) { return true }
        if let inline = blob.inline {
            try BlobRecord(sha256: blob.id.hex, size: blob.size, storedSize: blob.size, encoding: BlobEncoding.identity.rawValue,
                           inline: inline, createdAt: now).insert(db)
            return false
        }
        guard let installed else {
            throw VaultError(.io, "blob \(blob.id) is not in the catalog nor staged; re-run the import")
        }
        try BlobRecord(sha256: blob.id.hex, size: installed.size, storedSize: installed.storedSize,
                       encoding: installed.encoding.rawValue, inline: nil, createdAt: now).insert(db)
        return installed.deduplicated
    }

    /// The receipt of `zone` that already holds this content under this file name, if any.
    func receiptHolding(_ db: Database, _ id: BlobID, named filename: String, in zone: String) throws -> String? {
        // CROSS JOIN keeps SQLite on the blob index: joining from receipts scans the whole zone per file.
        // A cached statement: a manifest asks this once per row.
        try String.fetchOne(db.cachedStatement(sql: """
            SELECT r.id FROM attachments a CROSS JOIN receipts r ON r.id = a.receiptID
            WHERE a.sha256 = ? AND a.filename = ? AND r.zone = ? LIMIT 1
            """), arguments: [id.hex, filename, zone])
    }

    private func cachedBlob(_ input: InputFile, _ st: FileStatus) throws -> BlobID? {
        try catalog.read { db -> BlobID? in
            guard let entry = try ImportCacheEntry.fetchOne(db, key: input.path),
                  entry.device == Int64(bitPattern: st.device), entry.inode == Int64(bitPattern: st.inode),
                  entry.size == st.size, entry.mtimeNs == st.mtimeNanoseconds,
                  let id = BlobID(hex: entry.sha256),
                  let blob = try BlobRecord.fetchOne(db, key: entry.sha256) else { return nil }
            if blob.isInline || blobs.contains(id) { return id }
            return nil
        }
    }

    private func rememberInCache(_ db: Database, _ input: InputFile, _ id: BlobID) throws {
        try ImportCacheEntry(path: input.path, device: Int64(bitPattern: input.status.device),
                             inode: Int64(bitPattern: input.status.inode), size: input.status.size,
                             mtimeNs: input.status.mtimeNanoseconds, sha256: id.hex).save(db)
    }

    /// Expands the paths into regular files. Explicit paths must exist and be files or folders
    /// (links given explicitly are followed); inside folders only regular files are taken.
    func collectInputs(_ paths: [String], skipped: inout [FailedFile]) throws -> [InputFile] {
        var files: [InputFile] = []
        for given in paths {
            let path = absolute(given)
            guard let st = try wrapped({ try FileSystem.status(path, followLinks: true) }) else {
                throw VaultError.bad("cannot import \(given): no such file or folder")
            }
            if st.isDirectory {
                try walk(path, into: &files, skipped: &skipped)
            } else if st.isRegular {
                if Glibc.access(path, R_OK) != 0 { throw VaultError.bad("cannot import \(given): permission denied") }
                files.append(InputFile(path: path, status: st))
            } else {
                throw VaultError.bad("cannot import \(given): not a regular file or folder")
            }
        }
        return files
    }

    private func walk(_ folder: String, into files: inout [InputFile], skipped: inout [FailedFile]) throws {
        let names: [String]
        do { names = try FileSystem.contents(of: folder).sorted() } catch let error as IOError {
            skipped.append(FailedFile(path: folder, error: "skipped: \(error.message)"))
            return
        }
        for name in names {
            let path = FileSystem.join(folder, name)
            guard let st = try? FileSystem.status(path) else { continue }
            if st.isDirectory {
                try walk(path, into: &files, skipped: &skipped)
            } else if st.isRegular {
                files.append(InputFile(path: path, status: st))
            } else {
                let what = st.isSymlink ? "a symbolic link" : (st.mode & S_IFMT) == S_IFIFO ? "a FIFO"
                    : (st.mode & S_IFMT) == S_IFSOCK ? "a socket" : "not a regular file"
                skipped.append(FailedFile(path: path, error: "skipped: \(what)"))
            }
        }
    }

    func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        return FileSystem.join(FileManager.default.currentDirectoryPath, path)
    }
}
