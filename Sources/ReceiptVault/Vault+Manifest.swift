import BlobStore
import CFileOps
import Foundation
import GRDB
import GRDBSQLite
import ReceiptCatalog
#if canImport(Glibc)
import Glibc
#endif

/// Counters for a manifest import's progress display: first every row is checked (files hashed),
/// then written.
public struct ManifestProgress: Sendable {
    public enum Phase: Sendable { case checking, importing }
    public var phase: Phase
    public var rowsDone: Int
    /// 0 while checking (the manifest is streamed, its row count is not known in advance).
    public var rowsTotal: Int
    public var bytesDone: Int64
    public var bytesTotal: Int64
}

/// What a manifest import did, in numbers; the rows themselves went to `importManifest`'s `each`.
public struct ManifestSummary: Sendable, Equatable {
    /// Files attached (rows not `existing`).
    public var added = 0
    /// Receipts that gained at least one of those files.
    public var receiptsAdded = 0
    /// Rows whose file was already there (same receipt, or the same name and content in the zone).
    public var existing = 0
    public var failed: [FailedFile] = []
}

/// The metadata of one receipt as a manifest gives it: the values of the metadata columns present
/// in the header, canonical (validated). An empty value clears the field.
struct ManifestMetadata: Equatable {
    var values = Values()

    /// One slot per metadata column: held inline, not in a dictionary per row of a large manifest.
    struct Values: Equatable {
        private var merchant, date, total, currency, category, note, tags, status, claim, reimbursedOn: String?

        subscript(_ column: ManifestColumn) -> String? {
            get {
                switch column {
                case .merchant: merchant
                case .date: date
                case .total: total
                case .currency: currency
                case .category: category
                case .note: note
                case .tags: tags
                case .status: status
                case .claim: claim
                case .reimbursedOn: reimbursedOn
                default: nil
                }
            }
            set {
                switch column {
                case .merchant: merchant = newValue
                case .date: date = newValue
                case .total: total = newValue
                case .currency: currency = newValue
                case .category: category = newValue
                case .note: note = newValue
                case .tags: tags = newValue
                case .status: status = newValue
                case .claim: claim = newValue
                case .reimbursedOn: reimbursedOn = newValue
                default: break
                }
            }
        }

        /// The columns with a value, in `ManifestMetadata.columns` order.
        var present: [(column: ManifestColumn, value: String)] {
            ManifestMetadata.columns.compactMap { c in self[c].map { (c, $0) } }
        }
    }

    static let columns: [ManifestColumn] = [.merchant, .date, .total, .currency, .category, .note, .tags,
                                            .status, .claim, .reimbursedOn]

    func apply(to r: inout Receipt) {
        func text(_ c: ManifestColumn) -> String?? {
            guard let v = values[c] else { return .none }
            return .some(v.isEmpty ? nil : v)
        }
        if let v = text(.merchant) { r.merchant = v }
        if let v = text(.date) { r.date = v }
        if let v = text(.total) { r.total = v }
        if let v = text(.currency) { r.currency = v }
        if let v = text(.category) { r.category = v }
        if let v = text(.note) { r.note = v }
        if let v = values[.tags] { r.tags = Self.splitTags(v) }
        if let v = text(.status) { r.status = v ?? ClaimStatus.none.rawValue }
        if let v = text(.claim) { r.claim = v }
        if let v = text(.reimbursedOn) { r.reimbursedOn = v }
    }

    /// Without leading and trailing spaces and tabs (cheaper than Foundation's trimming, which a
    /// 100,000-row manifest calls half a million times).
    static func trimmed(_ text: Substring) -> String {
        var t = text
        while let c = t.first, c == " " || c == "\t" { t.removeFirst() }
        while let c = t.last, c == " " || c == "\t" { t.removeLast() }
        return String(t)
    }

    static func trimmed(_ text: String?) -> String? { text.map { trimmed(Substring($0)) } }

    static func splitTags(_ text: String) -> [String] {
        text.split(separator: ";").map { trimmed(Substring($0)) }.filter { !$0.isEmpty }
    }
}

/// A receipt a manifest describes (one or several rows sharing an id, or one row without id).
struct ManifestReceipt {
    /// The receipt's id, a UUID: its 16 bytes rather than 36 characters on the heap.
    let uuid: UUID
    /// The id as the catalog writes it (lowercase; Foundation's `uuidString` formats through snprintf
    /// and upper case, which 100,000 rows notice).
    var id: String { Self.text(uuid) }

    /// A receipt id as the catalog writes it.
    static func text(_ uuid: UUID) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(36)
        withUnsafeBytes(of: uuid.uuid) { bytes in
            for (i, byte) in bytes.enumerated() {
                if i == 4 || i == 6 || i == 8 || i == 10 { text.append(UInt8(ascii: "-")) }
                text.append(digits[Int(byte >> 4)])
                text.append(digits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: text, as: UTF8.self)
    }
    /// A receipt id in its canonical form (8-4-4-4-12 hexadecimal digits, either case), as Foundation's
    /// `UUID(uuidString:)` reads it, without its `sscanf` (once a row of a large manifest).
    static func uuid(_ text: String) -> UUID? {
        var text = text
        return text.withUTF8 { units -> UUID? in
            guard units.count == 36 else { return nil }
            var uuid: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                       UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            let ok = withUnsafeMutableBytes(of: &uuid) { bytes -> Bool in
                var at = 0
                for i in 0..<16 {
                    if at == 8 || at == 13 || at == 18 || at == 23 {
                        guard units[at] == UInt8(ascii: "-") else { return false }
                        at += 1
                    }
                    guard let byte = BlobID.hexByte(units, at: at) else { return false }
                    bytes[i] = byte
                    at += 2
                }
                return true
            }
            return ok ? UUID(uuid: uuid) : nil
        }
    }

    /// The id was given in the manifest (so a receipt with that id may already exist and is updated).
    let given: Bool
    let firstLine: Int
    var zone: String
    /// The zone came from the row's `zone` column or from `--zone`, not from a default.
    var zoneExplicit: Bool
    var metadata: ManifestMetadata
    /// A receipt with this id is in the vault already.
    var exists: Bool
}

/// A receipt id's 16 bytes as two big-endian words, ordered like the id's text.
struct UUIDKey: Comparable {
    let high, low: UInt64

    init(_ uuid: UUID) {
        let b = uuid.uuid
        func word(_ bytes: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8)) -> UInt64 {
            withUnsafeBytes(of: bytes) { $0.reduce(0) { $0 << 8 | UInt64($1) } }
        }
        high = word((b.0, b.1, b.2, b.3, b.4, b.5, b.6, b.7))
        low = word((b.8, b.9, b.10, b.11, b.12, b.13, b.14, b.15))
    }

    static func < (a: UUIDKey, b: UUIDKey) -> Bool { (a.high, a.low) < (b.high, b.low) }
}

/// A row's file to hash (pass 1), with what the row said about it.
struct HashJob: Sendable {
    let line: Int
    let given: String
    /// In the manifest's real folder; the last component may still be a symbolic link.
    let path: String
    /// The real folder of `path`.
    let folder: String
    let realFolder: String
    let name: String
    let filename: String?
    let expected: BlobID?
    /// The receipt the file belongs to; nil when the row is bad anyway.
    let receipt: Int?
}

/// What `hash` found: the file's real path and status, its content address and media type.
struct HashedFile: Sendable {
    let path: String
    let status: FileStatus
    /// nil for a large file not hashed yet.
    var id: BlobID?
    let mediaType: String
    /// The address came from the stat cache.
    var cached: Bool
}

extension Vault {
    /// Rows written per catalog transaction (small files live inline: no fsync each).
    /// Files smaller than this are hashed again rather than looked up in the stat cache.
    static let statCacheMinimum: Int64 = 64 << 10
    /// Rows whose small files a manifest import reads at once (inside the batch's transaction).
    static let manifestReadSlice = 1024
    /// The catalog's page cache during a manifest import (KiB): room for the index pages a batch dirties.
    static let manifestCacheKiB = 8192

    /// Imports the receipts a manifest describes (see `ManifestColumn`). Every row is checked first —
    /// files present, readable, inside the manifest's folder and hashing to `sha256` when given;
    /// metadata valid — and if any row is bad a `ManifestError` names every bad line and nothing is
    /// written. Rows sharing an `id` form one receipt; a row whose id already exists updates that
    /// receipt, so importing the same manifest twice changes nothing the second time. Own zones the
    /// manifest names that this vault lacks are created.
    public func importManifest(_ manifestPath: String, zone defaultZone: String? = nil,
                               progress: ((ManifestProgress) -> Void)? = nil) throws -> ImportReport {
        var report = ImportReport()
        let summary = try importManifestStreamed(manifestPath, zone: defaultZone, progress: progress) { report.imported.append($0) }
        report.failed = summary.failed
        return report
    }

    /// `importManifest`, handing each imported row to `each` once its transaction has committed (in
    /// manifest order) instead of holding them all: a 100,000-row report would be most of the memory.
    public func importManifestStreamed(_ manifestPath: String, zone defaultZone: String? = nil,
                                       progress: ((ManifestProgress) -> Void)? = nil,
                                       each: (ImportedFile) throws -> Void) throws -> ManifestSummary {
        if let defaultZone { _ = try Validate.zoneName(defaultZone) }
        // The import's short-lived threads (parsing, hashing, reading) would each take a malloc arena of
        // their own, up to eight per core, and every arena keeps what was freed in it: one per core
        // holds the peak RSS of a 100,000-row manifest ~8 MB lower (see "Memory" in docs/DESIGN.md).
        cfileops_limit_malloc_arenas(Int32(max(2, Parallel.cores)))
        let manifestPath = absolute(manifestPath)
        // Shared from the first check: pass 1 decides which blobs the vault holds already, and a gc
        // between the passes could otherwise take one of them (an orphan) before its row commits.
        return try wrapped {
            try locked(.shared) {
                let plan = try checkManifest(manifestPath, defaultZone: defaultZone, progress: progress)
                return try writeManifest(plan, progress: progress, each: each)
            }
        }
    }

    struct ManifestPlan {
        var receipts = ManifestReceipts()
        var files = ManifestFiles()
        var newZones: [String] = []
        var bytes: Int64 = 0
    }

    // MARK: - Pass 1: check every row, hash every file, write nothing

    private func checkManifest(_ manifestPath: String, defaultZone: String?,
                               progress: ((ManifestProgress) -> Void)?) throws -> ManifestPlan {
        let reader = try ManifestReader(path: manifestPath)
        let hasColumn = Set(reader.columns)
        let folder = FileSystem.parentPath(manifestPath)
        guard let realFolder = Self.realPath(folder) else {
            throw VaultError.bad("cannot read the folder of the manifest \(manifestPath)")
        }
        var plan = ManifestPlan()
        var problems: [ManifestProblem] = []
        var receiptIndex: [UUID: Int] = [:]
        var zoneState: [String: Bool] = [:]  // zone name → usable (existing writable, or to be created)
        var realFolders: [Substring: String?] = [:]  // a row's folder → where it really is
        var tally = ManifestProgress(phase: .checking, rowsDone: 0, rowsTotal: 0, bytesDone: 0, bytesTotal: 0)
        var jobs: [HashJob] = []
        var newContent = Set<Digest>()  // blobs the catalog lacks, once the first row naming each is filed

        try wrapped {
            try catalog.read { db in
                /// The batch being hashed (on every core) while the next rows are read and checked.
                var hashing: (jobs: [HashJob], results: Parallel.Background<[Result<HashedFile, Error>]>)?
                /// Starts hashing the files of the rows read since the last call, and files the batch
                /// hashed before in the plan (in manifest order); at the end, waits for the last one.
                func flush(last: Bool = false) throws {
                    let started = jobs.isEmpty ? nil : (jobs, Parallel.Background { [jobs] in
                        Parallel.map(jobs) { job in try self.hash(job) }
                    })
                    jobs = []
                    if let (done, results) = hashing { try file(done, results.wait()) }
                    hashing = started
                    if last, let (done, results) = hashing {
                        try file(done, results.wait())
                        hashing = nil
                    }
                }

                /// Files a hashed batch in the plan: large files are looked up in the stat cache (or hashed
                /// whole), all are looked up in the catalog, bad ones become problems.
                func file(_ jobs: [HashJob], _ hashed: [Result<HashedFile, Error>]) throws {
                    var results = hashed
                    // Large files: the stat cache may name their content; the others are hashed whole.
                    var large: [Int] = []
                    for (i, result) in results.enumerated() {
                        guard case .success(var hashed) = result, hashed.id == nil else { continue }
                        if let cached = try cachedContent(db, hashed.path, hashed.status) {
                            hashed.id = cached
                            hashed.cached = true
                            results[i] = .success(hashed)
                        } else {
                            large.append(i)
                        }
                    }
                    let largePaths = large.compactMap { i -> String? in
                        guard case .success(let hashed) = results[i] else { return nil }
                        return hashed.path
                    }
                    let whole = Parallel.map(largePaths) { path in try SHA256Hasher.hash(fileAt: path).0 }
                    for (i, outcome) in zip(large, whole) {
                        guard case .success(var hashed) = results[i] else { continue }
                        switch outcome {
                        case .success(let id): hashed.id = id; results[i] = .success(hashed)
                        case .failure(let error): results[i] = .failure(error)
                        }
                    }
                    // One query for the batch's hashes, not one per row.
                    let hashes = results.compactMap { result -> String? in
                        guard case .success(let hashed) = result, !hashed.cached else { return nil }
                        return hashed.id?.hex
                    }
                    let stored = hashes.isEmpty ? [] : Set(try String.fetchAll(db, sql: """
                        SELECT sha256 FROM blobs WHERE sha256 IN (\(databaseQuestionMarks(count: hashes.count)))
                        """, arguments: StatementArguments(hashes)))
                    for (job, result) in zip(jobs, results) {
                        switch result {
                        case .failure(let error as VaultError):
                            problems.append(ManifestProblem(line: job.line, message: error.message))
                        case .failure(let error):
                            problems.append(ManifestProblem(line: job.line, message: "cannot read \(Self.printable(job.given)): \(Self.message(error))"))
                        case .success(let hashed):
                            guard let id = hashed.id else { continue }
                            tally.bytesDone += hashed.status.size
                            if let expected = job.expected, expected != id {
                                problems.append(ManifestProblem(line: job.line, message:
                                    "sha256 mismatch for \(job.given): the file hashes to \(id), the manifest says \(expected)"))
                                continue
                            }
                            guard let receipt = job.receipt else { continue }
                            let known = hashed.cached || stored.contains(id.hex)
                            let digest = Digest(id)
                            let large = hashed.status.size >= Self.statCacheMinimum
                            plan.files.append(ManifestFile(line: job.line, given: job.given, folder: job.folder,
                                                           link: hashed.path == job.path ? nil : hashed.path,
                                                           filename: job.filename,
                                                           receipt: receipt, id: digest, size: hashed.status.size,
                                                           mediaType: hashed.mediaType, status: large ? hashed.status : nil,
                                                           known: known, cached: hashed.cached,
                                                           firstNew: !known && newContent.insert(digest).inserted))
                            plan.bytes += hashed.status.size
                        }
                    }
                    progress?(tally)
                }

                // CSV.swift parses on a thread of its own, a chunk ahead of the checks.
                let rows = ManifestPrefetch(reader)
                while let next = try rows.next() {
                    let row: ManifestRecord
                    switch next {
                    case .failure(let problem): problems.append(problem); continue
                    case .success(let r): row = r
                    }
                    var rowProblems: [String] = []
                    func bad(_ message: String) { rowProblems.append(message) }
                    func checked(_ column: ManifestColumn, _ check: (String) throws -> String) -> String? {
                        guard let raw = row[column] else { return nil }
                        if raw.isEmpty { return "" }
                        do { return try check(raw) } catch { bad(Self.message(error)); return nil }
                    }

                    // Metadata
                    var metadata = ManifestMetadata()
                    for column in ManifestMetadata.columns where hasColumn.contains(column) {
                        let value: String?
                        switch column {
                        case .date: value = checked(.date) { try Validate.date(ManifestMetadata.trimmed(Substring($0))) }
                        case .total: value = checked(.total, Validate.total)
                        case .currency: value = checked(.currency) { try Validate.currency(ManifestMetadata.trimmed(Substring($0))) }
                        case .status: value = checked(.status) { try Validate.status(ManifestMetadata.trimmed(Substring($0))) }
                        case .reimbursedOn:
                            value = checked(.reimbursedOn) { try Validate.date(ManifestMetadata.trimmed(Substring($0))) }
                        case .tags:
                            value = checked(.tags) { text in
                                let tags = try ManifestMetadata.splitTags(text).map { try Validate.text($0, field: "tag") }
                                return tags.joined(separator: ";")
                            }
                        default: value = checked(column) { try Validate.text($0, field: column.rawValue) }
                        }
                        if let value { metadata.values[column] = value }
                    }
                    let zoneText = ManifestMetadata.trimmed(row[.zone]) ?? ""
                    var zone = zoneText.isEmpty ? defaultZone : zoneText
                    if let z = zone, !zoneText.isEmpty {
                        do { _ = try Validate.zoneName(z) } catch { bad(Self.message(error)); zone = nil }
                    }
                    var givenID: String?
                    var givenUUID: UUID?
                    if let raw = ManifestMetadata.trimmed(row[.id]), !raw.isEmpty {
                        if let uuid = ManifestReceipt.uuid(raw) {
                            givenID = ManifestReceipt.text(uuid)
                            givenUUID = uuid
                        } else {
                            bad("invalid id '\(raw)': expected a receipt UUID such as 1f2e3d4c-5b6a-4789-9abc-def012345678")
                        }
                    }

                    // The file
                    let given = row[.path] ?? ""
                    var file: (folder: String, path: String)?
                    if given.isEmpty {
                        if givenID == nil && row[.id]?.isEmpty ?? true {
                            bad("path is empty (only a row with an id may describe a receipt without a file)")
                        }
                    } else {
                        do { file = try Self.confine(given, folder: folder, realFolder: realFolder, folders: &realFolders) } catch { bad(Self.message(error)) }
                    }
                    var expected: BlobID?
                    if let raw = ManifestMetadata.trimmed(row[.sha256]), !raw.isEmpty {
                        expected = BlobID(hex: raw)
                        if expected == nil { bad("invalid sha256 '\(raw)': expected 64 hexadecimal characters") }
                    }
                    if let name = row[.filename], name.utf8.contains(0) || name.utf8.contains(UInt8(ascii: "/")) {
                        bad("invalid filename '\(Self.printable(name))': it may not contain '/' or NUL")
                    }

                    // The receipt it belongs to
                    var index: Int?
                    if rowProblems.isEmpty {
                        if let givenID, let givenUUID, let existing = receiptIndex[givenUUID] {
                            var receipt = plan.receipts[existing]
                            for (column, value) in metadata.values.present where !value.isEmpty {
                                if let before = receipt.metadata.values[column], !before.isEmpty, before != value {
                                    bad("\(column.rawValue) '\(Self.printable(value))' differs from '\(Self.printable(before))' "
                                        + "given for receipt \(givenID) on line \(receipt.firstLine)")
                                } else {
                                    receipt.metadata.values[column] = value
                                }
                            }
                            if let zone, !zoneText.isEmpty || defaultZone != nil {
                                if receipt.zoneExplicit && receipt.zone != zone {
                                    bad("zone '\(zone)' differs from '\(receipt.zone)' given for receipt \(givenID) on line \(receipt.firstLine)")
                                } else if !receipt.zoneExplicit {
                                    receipt.zone = zone
                                    receipt.zoneExplicit = true
                                }
                            }
                            plan.receipts[existing] = receipt
                            index = existing
                        } else {
                            var receipt = ManifestReceipt(uuid: givenUUID ?? Self.newReceiptUUID(), given: givenID != nil,
                                                          firstLine: row.line, zone: zone ?? Zone.personal,
                                                          zoneExplicit: zone != nil, metadata: metadata, exists: false)
                            if let givenID, let storedZone = try ManifestSQL.text(db, "SELECT zone FROM receipts WHERE id = ?", givenID) {
                                receipt.exists = true
                                if receipt.zoneExplicit && storedZone != receipt.zone {
                                    bad("receipt \(givenID) is in zone '\(storedZone)' of this vault, not in '\(receipt.zone)'")
                                }
                                receipt.zone = storedZone
                            }
                            if rowProblems.isEmpty {
                                plan.receipts.append(receipt)
                                index = plan.receipts.count - 1
                                if let givenUUID { receiptIndex[givenUUID] = index }
                            }
                        }
                    }
                    if let index, rowProblems.isEmpty {
                        let zoneName = plan.receipts.zone(index)
                        if zoneState[zoneName] == nil {
                            if let stored = try Zone.fetchOne(db, key: zoneName) {
                                zoneState[zoneName] = stored.role != "read"
                                if stored.role == "read" {
                                    bad("zone '\(zoneName)' is shared with this account read-only: its receipts cannot be changed")
                                }
                            } else if zoneName.utf8.contains(UInt8(ascii: "/")) || zoneName.hasPrefix("-") {
                                zoneState[zoneName] = false
                                bad("no zone '\(zoneName)' in this vault (see `receipt zone list`)")
                            } else {
                                zoneState[zoneName] = true
                                plan.newZones.append(zoneName)
                            }
                        } else if zoneState[zoneName] == false {
                            bad("zone '\(zoneName)' cannot take receipts (see line \(plan.receipts.firstLine(index)))")
                        }
                    }
                    if let file {
                        // Opened, checked and hashed with the next rows' files, on every core.
                        let filename = row[.filename].flatMap { $0.isEmpty ? nil : $0 }
                        jobs.append(HashJob(line: row.line, given: given, path: file.path, folder: file.folder,
                                            realFolder: realFolder, name: filename ?? Self.lastComponent(given),
                                            filename: filename,
                                            expected: expected, receipt: rowProblems.isEmpty ? index : nil))
                    }
                    for message in rowProblems { problems.append(ManifestProblem(line: row.line, message: message)) }
                    tally.rowsDone += 1
                    if jobs.count >= 1024 { try flush() }
                }
                try flush(last: true)
            }
        }
        problems.sort { $0.line < $1.line }
        if !problems.isEmpty { throw ManifestError(file: manifestPath, problems: problems) }
        return plan
    }

    /// The row's file inside the manifest's folder: relative, no `..`, and its folder (resolved once
    /// per folder) no symbolic link leading out. The file itself is checked when `hash` opens it.
    static func confine(_ given: String, folder: String, realFolder: String,
                        folders: inout [Substring: String?]) throws -> (folder: String, path: String) {
        if given.utf8.contains(0) { throw VaultError.bad("invalid path '\(printable(given))': it contains a NUL byte") }
        if given.hasPrefix("/") {
            throw VaultError.bad("path \(printable(given)) is absolute: paths are relative to the manifest's folder")
        }
        // On bytes, as the kernel reads the path: a combining mark after a '/' joins it into one
        // Character, which would hide a ".." component from a String split.
        let bytes = given.utf8
        if bytes.split(separator: UInt8(ascii: "/")).contains(where: { $0.elementsEqual("..".utf8) }) {
            throw VaultError.bad("path \(printable(given)) leaves the manifest's folder ('..' is not allowed)")
        }
        let slash = bytes.lastIndex(of: UInt8(ascii: "/"))
        let dirPart = slash.map { given[..<$0] } ?? ""
        let name = slash.map { String(given[bytes.index(after: $0)...]) } ?? given
        let realDir: String
        if let cached = folders[dirPart] {
            guard let cached else { throw VaultError.bad("no such file: \(printable(given))") }
            realDir = cached
        } else {
            let resolved = dirPart.isEmpty ? realFolder : realPath(FileSystem.join(folder, String(dirPart)))
            folders[dirPart] = .some(resolved)
            guard let resolved else {
                let code = errno
                if code == ENOENT || code == ENOTDIR { throw VaultError.bad("no such file: \(printable(given))") }
                throw VaultError.bad("cannot read \(printable(given)): \(String(cString: strerror(code)))")
            }
            realDir = resolved
        }
        guard realDir == realFolder || realDir.hasPrefix(realFolder == "/" ? "/" : realFolder + "/") else {
            throw VaultError.bad("path \(printable(given)) leads outside the manifest's folder (through a symbolic link)")
        }
        return (realDir, name.isEmpty ? realDir : FileSystem.join(realDir, name))
    }

    /// Opens the row's file (a symbolic link only when it stays inside the manifest's folder), checks
    /// it is a regular file, sniffs its media type and hashes it — unless it is large and the stat
    /// cache names its content. Runs on worker threads; one open per file.
    func hash(_ job: HashJob) throws -> HashedFile {
        var shown: String { Self.printable(job.given) }  // only for errors
        var path = job.path
        var fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW)
        } catch let error as IOError where error.errno == ELOOP {
            guard let target = Self.realPath(path) else { throw VaultError.bad("no such file: \(shown)") }
            guard target.hasPrefix(job.realFolder == "/" ? "/" : job.realFolder + "/") else {
                throw VaultError.bad("path \(shown) leads outside the manifest's folder (through a symbolic link)")
            }
            path = target
            fd = try FileDescriptor.open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW)
        } catch let error as IOError where error.isNotFound {
            throw VaultError.bad("no such file: \(shown)")
        } catch let error as IOError where error.errno == ENXIO {
            throw VaultError.bad("\(shown) is not a regular file (a FIFO, socket or device)")
        }
        defer { fd.close() }
        let status = try fd.stat()
        if status.isDirectory { throw VaultError.bad("\(shown) is a folder, not a file") }
        guard status.isRegular else { throw VaultError.bad("\(shown) is not a regular file (a FIFO, socket or device)") }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Int(Self.statCacheMinimum), alignment: 16)
        defer { buffer.deallocate() }
        let first = try fd.readFully(into: buffer)
        let mediaType = MediaType.of(head: UnsafeRawBufferPointer(rebasing: buffer[..<min(first, 4096)]), filename: job.name)
        // A large file is hashed only if the stat cache does not name its content (see `flush`).
        if first == buffer.count { return HashedFile(path: path, status: status, id: nil, mediaType: mediaType, cached: false) }
        let id = SHA256Hasher.hash(UnsafeRawBufferPointer(rebasing: buffer[..<first]))
        return HashedFile(path: path, status: status, id: id, mediaType: mediaType, cached: false)
    }

    /// The stat cache: the content of a file seen before with the same device, inode, size and mtime,
    /// when the vault still holds it.
    private func cachedContent(_ db: Database, _ path: String, _ st: FileStatus) throws -> BlobID? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: """
                SELECT c.sha256, b.inline IS NOT NULL FROM importCache c JOIN blobs b ON b.sha256 = c.sha256
                WHERE c.path = ? AND c.device = ? AND c.inode = ? AND c.size = ? AND c.mtimeNs = ?
                """), arguments: [path, Int64(bitPattern: st.device), Int64(bitPattern: st.inode), st.size,
                                  st.mtimeNanoseconds]),
              let id = BlobID(hex: row[0]), (row[1] as Bool) || blobs.contains(id) else { return nil }
        return id
    }

    // MARK: - Pass 2: write, in batches (blobs installed before the rows that refer to them commit)

    /// The caller holds the vault lock shared, since before pass 1.
    private func writeManifest(_ plan: ManifestPlan, progress: ((ManifestProgress) -> Void)?,
                               each: (ImportedFile) throws -> Void) throws -> ManifestSummary {
        var report = ManifestSummary()
        var added = [Bool](repeating: false, count: plan.receipts.count)  // a file was added to it
        var tally = ManifestProgress(phase: .importing, rowsDone: 0, rowsTotal: plan.files.count, bytesDone: 0,
                                     bytesTotal: plan.bytes)
        // Receipts with no file are written with the first batch.
        // Per receipt, by index (arrays, not sets: a manifest may describe 100,000 receipts).
        var hasFile = [Bool](repeating: false, count: plan.receipts.count)
        for i in plan.files.indices { hasFile[plan.files.receipt(i)] = true }
        var started = [Bool](repeating: false, count: plan.receipts.count)  // its row was written
        var nextPosition = [Int](repeating: -1, count: plan.receipts.count)  // -1: not known yet
        // Blobs whose first row's file could not be read: the next row with that content tries its own.
        var retry = Set<Digest>()
        var tagJSON: [[String]: String] = [:]
        var start = plan.files.startIndex
        var first = true
        /// Where the batch that starts at `start` ends, and its new content: one row per blob not in the
        /// vault yet, the first row naming it (by offset in the batch) keeps the blob's "deduplicated"
        /// answer, later rows reuse it; `order` lists those first rows in address order. Read from the
        /// plan's fields, without decoding its rows.
        func planBatch(from start: Int) -> (end: Int, firstRow: [Digest: Int], order: [Int]) {
            var end = start
            var budget = BatchBudget()
            var firstRow: [Digest: Int] = [:]
            while end < plan.files.endIndex && !budget.isFull {
                // A file whose content the vault holds already costs a row, no bytes.
                let known = plan.files.known(end), size = plan.files.size(end), id = plan.files.id(end)
                budget.add(size: known ? 0 : size, inline: known || size < settings.inlineThreshold)
                if !known && (plan.files.firstNew(end) || retry.contains(id)) && firstRow[id] == nil {
                    firstRow[id] = end - start
                }
                end += 1
            }
            return (end, firstRow, firstRow.sorted { $0.key < $1.key }.map(\.value))
        }
        typealias Reading = (slice: ArraySlice<Int>, read: Parallel.Background<[(Digest, Result<PreparedBlob, Error>)]>)
        /// Reads (on every core, in the background) the small files of the slice of `order` from `start`;
        /// `file` gives a row of the batch by offset.
        func startReading(_ order: [Int], from start: Int, _ file: (Int) -> ManifestFile) -> Reading? {
            guard start < order.endIndex else { return nil }
            let slice = order[start..<min(start + Self.manifestReadSlice, order.endIndex)]
            let small = slice.map(file).filter { $0.size < settings.inlineThreshold }
            return (slice, Parallel.Background {
                Array(zip(small.map(\.id), Parallel.map(small) { try self.readManifestFile($0) }))
            })
        }
        /// The next batch, planned (and its first slice of small files being read) while the rows of the
        /// one before were written and committed.
        var next: (start: Int, planned: (end: Int, firstRow: [Digest: Int], order: [Int]), reading: Reading?)?
        while start < plan.files.endIndex || first {
            let planned: (end: Int, firstRow: [Digest: Int], order: [Int])
            var firstReading: Reading?
            if let ahead = next, ahead.start == start {
                (planned, firstReading) = (ahead.planned, ahead.reading)
            } else {
                planned = planBatch(from: start)
            }
            next = nil
            let (end, firstRow, order) = planned
            let batch = Array(plan.files[start..<end])  // decoded once; offsets below are into it
            // Large files are staged (on disk) and installed before the transaction; small ones are
            // read slice by slice inside it, so the batch's bytes are never all in memory. A file that
            // changed since it was checked is reported and skipped.
            var staged: [Digest: PreparedBlob] = [:]
            var unreadable: [Digest: String] = [:]
            defer { for p in staged.values { if let s = p.staged { blobs.discard(s) } } }
            let large = firstRow.values.sorted().map { batch[$0] }.filter { $0.size >= settings.inlineThreshold }
            for (f, outcome) in zip(large, Parallel.map(large) { try self.readManifestFile($0) }) {
                switch outcome {
                case .success(let blob): staged[f.id] = blob
                case .failure(let error): unreadable[f.id] = Self.message(error)
                }
            }
            let installed = try installStaged(Array(staged.values))
            let now = nowMillis()
            let isFirst = first
            let results: [RowOutcome?] = try catalog.write { db in
                let sql = ManifestSQL(db: db, now: now)
                if isFirst {
                    // A page cache that holds the pages of the randomly keyed indexes (ids, hashes) a batch
                    // touches, so each is written once per transaction, not spilled and written again:
                    // see "Manifest import" in docs/DESIGN.md.
                    try db.execute(sql: "PRAGMA cache_size = -\(Self.manifestCacheKiB)")
                    for name in plan.newZones where try !Zone.exists(db, key: name) {
                        try Zone(name: name, createdAt: now).insert(db)
                    }
                    for index in plan.receipts.indices where !hasFile[index] {
                        try writeManifestReceipt(sql, plan.receipts[index], id: plan.receipts.id(index), tagJSON: &tagJSON)
                        started[index] = true
                    }
                }
                // 1. The new blobs, in address order: the blobs' index is keyed by address, so each of
                // its pages is visited once; the blob rows themselves are appended either way.
                var dedupedNew: [Digest: Bool] = [:]  // blob → the vault had it already
                // The next slice is read while this one is inserted.
                var reading = firstReading ?? startReading(order, from: order.startIndex) { batch[$0] }
                while let (slice, pending) = reading {
                    let outcomes = pending.wait()
                    reading = startReading(order, from: slice.endIndex) { batch[$0] }
                    var read: [Digest: PreparedBlob] = [:]
                    for (id, outcome) in outcomes {
                        switch outcome {
                        case .success(let blob): read[id] = blob
                        case .failure(let error): unreadable[id] = Self.message(error)
                        }
                    }
                    for offset in slice {
                        let id = batch[offset].id
                        guard let blob = read[id] ?? staged[id] else { continue }
                        dedupedNew[id] = try sql.insertBlob(blob, installed: installed[blob.id])
                    }
                }
                for id in firstRow.keys {
                    if unreadable[id] != nil { retry.insert(id) } else { retry.remove(id) }
                }
                // `retry` is settled: the next batch's first files are read while these rows are written.
                if end < plan.files.endIndex {
                    let ahead = planBatch(from: end)
                    next = (end, ahead, startReading(ahead.order, from: ahead.order.startIndex) { plan.files[end + $0] })
                }
                // 2. The rows. Which rows are first with a blob was settled above by manifest position;
                // what else one row's outcome may take from another's is `receiptHolding`, asked by rows
                // of receipts without an id, which finds attachments of that row's own blob. So unless
                // such a row shares its blob with another row of the batch, the rows are written in
                // receipt-id order (the rows of one receipt keep theirs): the indexes keyed by receipt id
                // (receipts, attachments, outbox) then have each page visited once per batch. Otherwise
                // in manifest order. The report keeps manifest order either way.
                var rowOrder = Array(batch.indices)
                var blobRows: [Digest: Int] = [:]
                // Only rows without id ask `receiptHolding`: a batch of rows with ids need not count.
                if batch.contains(where: { !plan.receipts.given($0.receipt) }) {
                    for f in batch { blobRows[f.id, default: 0] += 1 }
                }
                if !batch.contains(where: { !plan.receipts.given($0.receipt) && blobRows[$0.id, default: 0] > 1 }) {
                    // By the id's bytes: the order of its lowercase hex text.
                    let ids = rowOrder.map { plan.receipts.key(batch[$0].receipt) }
                    var positions = Array(rowOrder.indices)
                    positions.sort { ids[$0] != ids[$1] ? ids[$0] < ids[$1] : $0 < $1 }
                    rowOrder = positions.map { rowOrder[$0] }
                }
                // What became of each row, by offset: turned into the report once the batch commits.
                var out = [RowOutcome?](repeating: nil, count: batch.count)
                var recorded = Set<Int>()  // receipts whose outbox entry this batch wrote
                var touched = Set<Int>()   // receipts that gained an attachment
                for offset in rowOrder {
                    let f = batch[offset]
                    // Held by some receipt already: in the vault before, or written by an earlier row.
                    let held: Bool
                    var deduplicated = true
                    if let first = firstRow[f.id] {
                        if let error = unreadable[f.id] {
                            out[offset] = .failed(error)
                            continue
                        }
                        held = offset != first
                        if !held { deduplicated = dedupedNew[f.id] ?? true }
                    } else {
                        held = true
                    }
                    // The receipt is decoded (metadata and all) only where its row is written.
                    if !plan.receipts.given(f.receipt), !started[f.receipt], held,
                       let existing = try receiptHolding(db, f.id.blobID, named: f.name, in: plan.receipts.zone(f.receipt)) {
                        // Without an id, a file already filed under this name in the zone is not added again.
                        out[offset] = .imported(heldBy: existing, deduplicated: true, existing: true)
                        continue
                    }
                    let receiptID = plan.receipts.id(f.receipt)
                    if !started[f.receipt] {
                        if try writeManifestReceipt(sql, plan.receipts[f.receipt], id: receiptID, tagJSON: &tagJSON) {
                            recorded.insert(f.receipt)
                        }
                        started[f.receipt] = true
                    }
                    var position: Int
                    if nextPosition[f.receipt] >= 0 {
                        position = nextPosition[f.receipt]
                    } else if plan.receipts.exists(f.receipt) {
                        position = (try Int.fetchOne(db.cachedStatement(sql: "SELECT max(position) FROM attachments WHERE receiptID = ?"),
                                                     arguments: [receiptID]) ?? -1) + 1
                    } else {
                        position = 0
                    }
                    let inserted = try sql.insertAttachment(receiptID, f, position: position)
                    if inserted {
                        position += 1
                        touched.insert(f.receipt)
                    }
                    nextPosition[f.receipt] = position
                    // The stat cache pays for files whose hashing costs more than a lookup.
                    if !f.cached, f.size >= Self.statCacheMinimum, let status = f.status { try sql.remember(f, status) }
                    out[offset] = .imported(heldBy: nil, deduplicated: deduplicated, existing: !inserted)
                }
                for index in touched.subtracting(recorded).sorted() {
                    let id = plan.receipts.id(index)
                    try db.execute(sql: "UPDATE receipts SET modifiedAt = ? WHERE id = ?", arguments: [now, id])
                    try sql.recordChange(id, zone: plan.receipts.zone(index))
                }
                return out
            }
            for (f, outcome) in zip(batch, results) {
                switch outcome {
                case nil: continue
                case .failed(let error): report.failed.append(FailedFile(path: f.given, error: error))
                case .imported(let heldBy, let deduplicated, let existing):
                    if !existing {
                        report.added += 1
                        if !added[f.receipt] { added[f.receipt] = true; report.receiptsAdded += 1 }
                    } else {
                        report.existing += 1
                    }
                    try each(ImportedFile(id: heldBy ?? plan.receipts.id(f.receipt), path: f.given, sha256: f.id.hex,
                                          size: f.size, deduplicated: deduplicated, existing: existing))
                }
            }
            tally.rowsDone = end
            tally.bytesDone += batch.reduce(0) { $0 + $1.size }
            progress?(tally)
            start = end
            first = false
        }
        return report
    }

    /// What became of a row in pass 2 (the report is made of it once the row's transaction commits).
    private enum RowOutcome {
        /// Its file could not be read again, or changed since it was checked.
        case failed(String)
        /// `heldBy`: the receipt that already held the file under this name (a row without id).
        case imported(heldBy: String?, deduplicated: Bool, existing: Bool)
    }

    /// Inserts a new receipt or applies the manifest's metadata to the existing one. Returns whether
    /// the row changed (and so wrote its outbox entry).
    @discardableResult
    private func writeManifestReceipt(_ sql: ManifestSQL, _ planned: ManifestReceipt, id: String,
                                      tagJSON: inout [[String]: String]) throws -> Bool {
        if planned.exists, var stored = try Receipt.fetchOne(sql.db, key: id) {
            let before = stored
            planned.metadata.apply(to: &stored)
            guard stored != before else { return false }
            stored.modifiedAt = sql.now
            try stored.update(sql.db)
            try sql.recordChange(stored.id, zone: stored.zone)
            return true
        }
        var receipt = Receipt(id: id, zone: planned.zone, createdAt: sql.now, modifiedAt: sql.now)
        planned.metadata.apply(to: &receipt)
        let tags: String
        if let known = tagJSON[receipt.tags] {
            tags = known
        } else {
            // The tags column as GRDB's Codable records write it (JSON), computed once per tag set.
            let data = try Receipt.databaseJSONEncoder(for: "tags").encode(receipt.tags)
            tags = String(decoding: data, as: UTF8.self)
            tagJSON[receipt.tags] = tags
        }
        try sql.insertReceipt(receipt, tagsJSON: tags)
        try sql.recordChange(receipt.id, zone: receipt.zone)
        return true
    }

    /// The file's content made ready to reference, checked against the hash pass 1 computed.
    private func readManifestFile(_ f: ManifestFile) throws -> PreparedBlob {
        try FileDescriptor.with(f.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK) { fd in
            let st = try fd.stat()
            guard st.isRegular else { throw VaultError.bad("\(f.given) is no longer a regular file") }
            if st.size < settings.inlineThreshold {
                var bytes = [UInt8](repeating: 0, count: Int(st.size) + 1)
                let n = try bytes.withUnsafeMutableBytes { try fd.readFully(into: $0) }
                bytes.removeLast(bytes.count - min(n, bytes.count))
                let id = SHA256Hasher.hash(bytes)
                guard Digest(id) == f.id, n <= st.size else {
                    throw VaultError.bad("\(f.given) changed while it was being imported (it now hashes to \(id))")
                }
                return PreparedBlob(id: id, size: Int64(n), mediaType: f.mediaType, inline: bytes, staged: nil, cached: false)
            }
            do {
                let staged = try blobs.stage(from: fd, compression: settings.compression, expected: f.id.blobID)
                return PreparedBlob(id: staged.id, size: staged.size, mediaType: f.mediaType, inline: nil,
                                    staged: staged, cached: false)
            } catch BlobError.mismatch(_, let actual) {
                throw VaultError.bad("\(f.given) changed while it was being imported (it now hashes to \(actual))")
            }
        }
    }

    // MARK: - Helpers

    /// A random (version 4) UUID from OpenSSL's generator: Foundation's `UUID()` opens /dev/urandom for
    /// each one, which a 100,000-row manifest notices.
    static func newReceiptUUID() -> UUID {
        var b = SecureRandom.bytes(16)
        b[6] = (b[6] & 0x0F) | 0x40
        b[8] = (b[8] & 0x3F) | 0x80
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = Glibc.realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The last non-empty component, split on bytes like `confine`.
    static func lastComponent(_ path: String) -> String {
        let bytes = path.utf8
        guard let last = bytes.lastIndex(where: { $0 != UInt8(ascii: "/") }) else { return path }
        let start = bytes[..<last].lastIndex(of: UInt8(ascii: "/")).map(bytes.index(after:)) ?? bytes.startIndex
        return String(path[start..<bytes.index(after: last)])
    }

    /// A value as it can be shown on one line: control characters escaped.
    static func printable(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7F {
                out += scalar == "\n" ? "\\n" : scalar == "\r" ? "\\r" : scalar == "\t" ? "\\t"
                    : "\\u{" + String(scalar.value, radix: 16) + "}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    static func message(_ error: Error) -> String {
        switch VaultError.wrap(error) {
        case let e as VaultError: return e.message
        case let e as IOError: return e.message
        case let e as BlobError: return e.description
        case let e: return String(describing: e)
        }
    }
}

/// The statements a manifest import runs for every row, as prepared statements (GRDB caches them per
/// connection), bound and stepped through SQLite's C API: the record layer's SQL generation and Codable
/// encoding, then GRDB's boxing of every argument, cost more than SQLite itself at 100,000 rows.
struct ManifestSQL {
    let db: Database
    let now: Millis
    /// Each statement looked up in GRDB's cache (by its SQL text) once per transaction, not once a row.
    private let statements = Statements()

    init(db: Database, now: Millis) {
        self.db = db
        self.now = now
    }

    private final class Statements {
        private var held: [Statement?] = Array(repeating: nil, count: 4)

        func handle(_ slot: Int, _ sql: String, _ db: Database) throws -> SQLiteStatement {
            if let statement = held[slot] { return statement.sqliteStatement }
            let statement = try db.cachedStatement(sql: sql)
            held[slot] = statement
            return statement.sqliteStatement
        }
    }

    /// Inserts the blob's row unless present; returns whether the vault already had the blob.
    func insertBlob(_ blob: PreparedBlob, installed: StoredBlob?) throws -> Bool {
        // Inline bytes, or the blob file installed before this transaction.
        guard blob.inline != nil || installed != nil else {
            throw VaultError(.io, "blob \(blob.id) is not in the catalog nor staged; re-run the import")
        }
        let changes = try run(0, """
            INSERT OR IGNORE INTO blobs(sha256, size, storedSize, encoding, inline, createdAt) VALUES (?, ?, ?, ?, ?, ?)
            """) {
            $0.text(blob.id.hex)
            $0.int(installed?.size ?? blob.size)
            $0.int(installed?.storedSize ?? blob.size)
            $0.text((installed?.encoding ?? .identity).rawValue)
            $0.blob(blob.inline)
            $0.int(now)
        }
        return changes == 0 || (blob.inline == nil && installed?.deduplicated == true)
    }

    func insertReceipt(_ r: Receipt, tagsJSON: String) throws {
        _ = try run(1, """
            INSERT INTO receipts(id, zone, merchant, date, total, currency, category, note, tags, createdAt, modifiedAt,
                                 status, claim, reimbursedOn)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """) {
            for text in [r.id, r.zone, r.merchant, r.date, r.total, r.currency, r.category, r.note, tagsJSON] { $0.text(text) }
            $0.int(r.createdAt)
            $0.int(r.modifiedAt)
            for text in [r.status, r.claim, r.reimbursedOn] { $0.text(text) }
        }
    }

    /// Returns false when the receipt already holds the blob.
    func insertAttachment(_ receiptID: String, _ f: ManifestFile, position: Int) throws -> Bool {
        try run(2, "INSERT OR IGNORE INTO attachments(receiptID, sha256, filename, mediaType, position) VALUES (?, ?, ?, ?, ?)") {
            $0.text(receiptID)
            $0.text(f.id.hex)
            $0.text(f.name)
            $0.text(f.mediaType)
            $0.int(Int64(position))
        } > 0
    }

    /// The outbox entry of a changed receipt (same row as `Vault.recordChange` writes).
    func recordChange(_ id: String, zone: String) throws {
        _ = try run(3, "INSERT INTO changes(receiptID, zone, kind, at) VALUES (?, ?, ?, ?)") {
            $0.text(id)
            $0.text(zone)
            $0.text(Change.Kind.upsert.rawValue)
            $0.int(now)
        }
    }

    /// The stat cache entry, so an unchanged file is not hashed again by the next import.
    func remember(_ f: ManifestFile, _ status: FileStatus) throws {
        try db.cachedStatement(sql: """
            INSERT OR REPLACE INTO importCache(path, device, inode, size, mtimeNs, sha256) VALUES (?, ?, ?, ?, ?, ?)
            """).execute(arguments: [f.path, Int64(bitPattern: status.device), Int64(bitPattern: status.inode),
                                     status.size, status.mtimeNanoseconds, f.id.hex])
    }

    /// The first column of the first row of a query taking one text argument, as text (nil: no row, or
    /// NULL). Through SQLite's C API like the inserts: a pass-1 lookup once a row.
    static func text(_ db: Database, _ sql: String, _ argument: String) throws -> String? {
        let handle = try db.cachedStatement(sql: sql).sqliteStatement
        sqlite3_reset(handle)
        defer { sqlite3_reset(handle) }
        var code = sqlite3_bind_text(handle, 1, argument, -1, Binder.transient)
        if code == SQLITE_OK { code = sqlite3_step(handle) }
        switch code {
        case SQLITE_ROW:
            return sqlite3_column_text(handle, 0).map { String(cString: $0) }
        case SQLITE_DONE:
            return nil
        default:
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)), sql: sql)
        }
    }

    /// Binds the values in order (each copied by SQLite) and runs the statement once; returns the rows
    /// it changed.
    private func run(_ slot: Int, _ sql: String, _ bind: (inout Binder) -> Void) throws -> Int {
        let handle = try statements.handle(slot, sql, db)
        sqlite3_reset(handle)
        var binder = Binder(handle: handle)
        bind(&binder)
        // A value SQLite could not take (too big, no memory) must not run with the last row's value.
        let code = binder.failure == SQLITE_OK ? sqlite3_step(handle) : binder.failure
        guard code == SQLITE_DONE else {
            let message = String(cString: sqlite3_errmsg(db.sqliteConnection))
            sqlite3_reset(handle)
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: sql)
        }
        sqlite3_reset(handle)
        return db.changesCount
    }

    private struct Binder {
        let handle: OpaquePointer
        private var index: Int32 = 0
        /// The first binding SQLite refused.
        private(set) var failure = SQLITE_OK

        init(handle: OpaquePointer) { self.handle = handle }

        /// Text without NUL (checked before: paths, names and metadata refuse it; the rest is ours).
        mutating func text(_ value: String?) {
            index += 1
            if let value {
                check(sqlite3_bind_text(handle, index, value, -1, Self.transient))
            } else {
                check(sqlite3_bind_null(handle, index))
            }
        }

        mutating func int(_ value: Int64) {
            index += 1
            check(sqlite3_bind_int64(handle, index, value))
        }

        mutating func blob(_ bytes: [UInt8]?) {
            index += 1
            guard let bytes else {
                check(sqlite3_bind_null(handle, index))
                return
            }
            // An empty file is an empty blob, not NULL (which would say "not inline").
            if bytes.isEmpty {
                check(sqlite3_bind_zeroblob(handle, index, 0))
                return
            }
            check(bytes.withUnsafeBytes { sqlite3_bind_blob64(handle, index, $0.baseAddress, UInt64($0.count), Self.transient) })
        }

        private mutating func check(_ code: Int32) {
            if code != SQLITE_OK && failure == SQLITE_OK { failure = code }
        }

        static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
    }
}
