import BlobStore
import Foundation
import GRDB
import MediaTypes
import ReceiptCatalog
#if canImport(Glibc)
import Glibc
#endif

extension Vault {
    /// Files smaller than this are hashed again rather than looked up in the stat cache.
    static let statCacheMinimum: Int64 = 64 << 10
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
        let manifestPath = absolute(manifestPath)
        // Shared from the first check: pass 1 decides which blobs the vault holds already, and a gc
        // between the passes could otherwise take one of them (an orphan) before its row commits.
        return try wrapped {
            try locked(.shared) {
                // The checked rows wait in a file of their own, removed however this ends.
                let plan = try ManifestPlan(interim: blobs.interimPath)
                defer { plan.close() }
                try checkManifest(manifestPath, into: plan, defaultZone: defaultZone, progress: progress)
                return try writeManifest(plan, progress: progress, each: each)
            }
        }
    }

    // MARK: - Pass 1: check every row, hash every file, write nothing

    private func checkManifest(_ manifestPath: String, into plan: ManifestPlan, defaultZone: String?,
                               progress: ((ManifestProgress) -> Void)?) throws {
        let reader = try ManifestReader(path: manifestPath)
        let hasColumn = Set(reader.columns)
        let folder = FileSystem.parentPath(manifestPath)
        guard let realFolder = Self.realPath(folder) else {
            throw VaultError.bad("cannot read the folder of the manifest \(manifestPath)")
        }
        var problems: [ManifestProblem] = []
        var zoneState: [String: Bool] = [:]  // zone name → usable (existing writable, or to be created)
        var realFolders: [Substring: String?] = [:]  // a row's folder → where it really is
        var tally = ManifestProgress(phase: .checking, rowsDone: 0, rowsTotal: 0, bytesDone: 0, bytesTotal: 0)
        var jobs: [HashJob] = []

        try wrapped {
            try catalog.read { db in
                /// The batch being hashed (on every core) while the next rows are read and checked.
                var hashing: (jobs: [HashJob], results: Parallel.Future<[Result<HashedFile, Error>]>)?
                /// Starts hashing the files of the rows read since the last call, and files the batch
                /// hashed before in the plan (in manifest order); at the end, waits for the last one.
                func flush(last: Bool = false) throws {
                    let started = jobs.isEmpty ? nil : (jobs, Parallel.Future { [jobs] in
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
                    let hashes = results.compactMap { result -> BlobID? in
                        guard case .success(let hashed) = result, !hashed.cached else { return nil }
                        return hashed.id
                    }
                    let stored = try Catalog.heldBlobs(db, among: hashes)
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
                            let known = hashed.cached || stored.contains(id)
                            let digest = Digest(id)
                            let large = hashed.status.size >= Self.statCacheMinimum
                            let firstNew = known ? false : try plan.firstSeen(digest)
                            try plan.append(ManifestFile(line: job.line, given: job.given, folder: job.folder,
                                                           link: hashed.path == job.path ? nil : hashed.path,
                                                           filename: job.filename,
                                                           receipt: receipt, id: digest, size: hashed.status.size,
                                                           mediaType: hashed.mediaType, status: large ? hashed.status : nil,
                                                           known: known, cached: hashed.cached,
                                                           firstNew: firstNew))
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
                    var givenID: ReceiptID?
                    if let raw = ManifestMetadata.trimmed(row[.id]), !raw.isEmpty {
                        givenID = ReceiptID(raw)
                        if givenID == nil {
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
                    var current: ManifestReceipt?
                    if rowProblems.isEmpty {
                        if let givenID, let existing = try plan.receipt(given: givenID.uuid) {
                            var receipt = try plan.receipt(existing)
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
                            try plan.update(existing, receipt)
                            index = existing
                            current = receipt
                        } else {
                            var receipt = ManifestReceipt(uuid: (givenID ?? ReceiptID.generate()).uuid, given: givenID != nil,
                                                          firstLine: row.line, zone: zone ?? Zone.personal,
                                                          zoneExplicit: zone != nil, metadata: metadata, exists: false)
                            if let givenID, let storedZone = try Catalog.zone(db, ofReceipt: givenID) {
                                receipt.exists = true
                                if receipt.zoneExplicit && storedZone != receipt.zone {
                                    bad("receipt \(givenID) is in zone '\(storedZone)' of this vault, not in '\(receipt.zone)'")
                                }
                                receipt.zone = storedZone
                            }
                            if rowProblems.isEmpty {
                                index = try plan.append(receipt)
                                current = receipt
                            }
                        }
                    }
                    if let current, rowProblems.isEmpty {
                        let zoneName = current.zone
                        if zoneState[zoneName] == nil {
                            if let stored = try Catalog.zone(db, zoneName) {
                                zoneState[zoneName] = stored.role.canWrite
                                if !stored.role.canWrite {
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
                            bad("zone '\(zoneName)' cannot take receipts (see line \(current.firstLine))")
                        }
                    }
                    if let file {
                        // Opened, checked and hashed with the next rows' files, on every core.
                        let filename = row[.filename].flatMap { $0.isEmpty ? nil : $0 }
                        jobs.append(HashJob(line: row.line, given: given, path: file.path, folder: file.folder,
                                            realFolder: realFolder, name: filename ?? FileSystem.lastComponent(given),
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
        } catch let error as PathError where error.errno == ELOOP {
            guard let target = Self.realPath(path) else { throw VaultError.bad("no such file: \(shown)") }
            guard target.hasPrefix(job.realFolder == "/" ? "/" : job.realFolder + "/") else {
                throw VaultError.bad("path \(shown) leads outside the manifest's folder (through a symbolic link)")
            }
            path = target
            fd = try FileDescriptor.open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW)
        } catch let error as PathError where error.isNotFound {
            throw VaultError.bad("no such file: \(shown)")
        } catch let error as PathError where error.errno == ENXIO {
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
        guard let cached = try Catalog.cachedImport(db, path: path, status: st),
              cached.inline || blobs.contains(cached.id) else { return nil }
        return cached.id
    }

    // MARK: - Helpers

    static func realPath(_ path: String) -> String? {
        try? FileSystem.realPath(path)
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
        case let e as PathError: return e.message
        case let e as BlobError: return e.description
        case let e: return String(describing: e)
        }
    }
}
