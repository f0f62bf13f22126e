import BlobStore
import Foundation
import GRDB
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

/// The metadata of one receipt as a manifest gives it: the values of the metadata columns present
/// in the header, canonical (validated). An empty value clears the field.
struct ManifestMetadata: Equatable {
    var values: [ManifestColumn: String] = [:]

    static let columns: [ManifestColumn] = [.merchant, .date, .total, .currency, .category, .note, .tags]

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
    }

    static func splitTags(_ text: String) -> [String] {
        text.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}

/// A receipt a manifest describes (one or several rows sharing an id, or one row without id).
struct ManifestReceipt {
    let id: String
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

/// One checked row with a file: what pass 2 writes.
struct ManifestFile {
    let line: Int
    let given: String
    let path: String
    let name: String
    let receipt: Int
    let id: BlobID
    let size: Int64
    let mediaType: String
    let status: FileStatus
    /// The catalog held the blob when the row was checked.
    let known: Bool
}

extension Vault {
    /// Rows written per catalog transaction (small files live inline: no fsync each).
    static let manifestBatchRows = 8192

    /// Imports the receipts a manifest describes (see `ManifestColumn`). Every row is checked first —
    /// files present, readable, inside the manifest's folder and hashing to `sha256` when given;
    /// metadata valid — and if any row is bad a `ManifestError` names every bad line and nothing is
    /// written. Rows sharing an `id` form one receipt; a row whose id already exists updates that
    /// receipt, so importing the same manifest twice changes nothing the second time. Own zones the
    /// manifest names that this vault lacks are created.
    public func importManifest(_ manifestPath: String, zone defaultZone: String? = nil,
                               progress: ((ManifestProgress) -> Void)? = nil) throws -> ImportReport {
        if let defaultZone { _ = try Validate.zoneName(defaultZone) }
        let manifestPath = absolute(manifestPath)
        let plan = try checkManifest(manifestPath, defaultZone: defaultZone, progress: progress)
        return try wrapped { try writeManifest(plan, progress: progress) }
    }

    struct ManifestPlan {
        var receipts: [ManifestReceipt] = []
        var files: [ManifestFile] = []
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
        var receiptIndex: [String: Int] = [:]
        var zoneState: [String: Bool] = [:]  // zone name → usable (existing writable, or to be created)
        var tally = ManifestProgress(phase: .checking, rowsDone: 0, rowsTotal: 0, bytesDone: 0, bytesTotal: 0)
        let hasher = SHA256Hasher()
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: BlobStore.chunkSize, alignment: 16)
        defer { chunk.deallocate() }

        try wrapped {
            try catalog.read { db in
                while let next = try reader.next() {
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
                        case .date: value = checked(.date) { try Validate.date($0.trimmingCharacters(in: .whitespaces)) }
                        case .total: value = checked(.total, Validate.total)
                        case .currency: value = checked(.currency) { try Validate.currency($0.trimmingCharacters(in: .whitespaces)) }
                        case .tags:
                            value = checked(.tags) { text in
                                let tags = try ManifestMetadata.splitTags(text).map { try Validate.text($0, field: "tag") }
                                return tags.joined(separator: ";")
                            }
                        default: value = checked(column) { try Validate.text($0, field: column.rawValue) }
                        }
                        if let value { metadata.values[column] = value }
                    }
                    let zoneText = (row[.zone] ?? "").trimmingCharacters(in: .whitespaces)
                    var zone = zoneText.isEmpty ? defaultZone : zoneText
                    if let z = zone, !zoneText.isEmpty {
                        do { _ = try Validate.zoneName(z) } catch { bad(Self.message(error)); zone = nil }
                    }
                    var givenID: String?
                    if let raw = row[.id]?.trimmingCharacters(in: .whitespaces), !raw.isEmpty {
                        if raw.count == 36, let uuid = UUID(uuidString: raw) {
                            givenID = uuid.uuidString.lowercased()
                        } else {
                            bad("invalid id '\(raw)': expected a receipt UUID such as 1f2e3d4c-5b6a-4789-9abc-def012345678")
                        }
                    }

                    // The file
                    let given = row[.path] ?? ""
                    var file: (path: String, status: FileStatus)?
                    if given.isEmpty {
                        if givenID == nil && row[.id]?.isEmpty ?? true {
                            bad("path is empty (only a row with an id may describe a receipt without a file)")
                        }
                    } else {
                        do { file = try Self.confine(given, folder: folder, realFolder: realFolder) } catch { bad(Self.message(error)) }
                    }
                    var expected: BlobID?
                    if let raw = row[.sha256]?.trimmingCharacters(in: .whitespaces), !raw.isEmpty {
                        expected = BlobID(hex: raw)
                        if expected == nil { bad("invalid sha256 '\(raw)': expected 64 hexadecimal characters") }
                    }
                    var hashed: (id: BlobID, mediaType: String, known: Bool)?
                    if let file {
                        let name = row[.filename].flatMap { $0.isEmpty ? nil : $0 } ?? Self.lastComponent(given)
                        do {
                            let result = try hashManifestFile(db, file.path, file.status, name: name, hasher: hasher, chunk: chunk)
                            if let expected, expected != result.id {
                                bad("sha256 mismatch for \(given): the file hashes to \(result.id), the manifest says \(expected)")
                            }
                            hashed = result
                        } catch {
                            bad("cannot read \(given): \(Self.message(error))")
                        }
                        tally.bytesDone += file.status.size
                    }
                    if let name = row[.filename], name.contains("\0") || name.contains("/") {
                        bad("invalid filename '\(Self.printable(name))': it may not contain '/' or NUL")
                    }

                    // The receipt it belongs to
                    var index: Int?
                    if rowProblems.isEmpty {
                        if let givenID, let existing = receiptIndex[givenID] {
                            var receipt = plan.receipts[existing]
                            for (column, value) in metadata.values where !value.isEmpty {
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
                            var receipt = ManifestReceipt(id: givenID ?? UUID().uuidString.lowercased(), given: givenID != nil,
                                                          firstLine: row.line, zone: zone ?? Zone.personal,
                                                          zoneExplicit: zone != nil, metadata: metadata, exists: false)
                            if let givenID, let stored = try Receipt.fetchOne(db, key: givenID) {
                                receipt.exists = true
                                if receipt.zoneExplicit && stored.zone != receipt.zone {
                                    bad("receipt \(givenID) is in zone '\(stored.zone)' of this vault, not in '\(receipt.zone)'")
                                }
                                receipt.zone = stored.zone
                            }
                            if rowProblems.isEmpty {
                                plan.receipts.append(receipt)
                                index = plan.receipts.count - 1
                                if let givenID { receiptIndex[givenID] = index }
                            }
                        }
                    }
                    if let index, rowProblems.isEmpty {
                        let zoneName = plan.receipts[index].zone
                        if zoneState[zoneName] == nil {
                            if let stored = try Zone.fetchOne(db, key: zoneName) {
                                zoneState[zoneName] = stored.role != "read"
                                if stored.role == "read" {
                                    bad("zone '\(zoneName)' is shared with this account read-only: its receipts cannot be changed")
                                }
                            } else if zoneName.contains("/") || zoneName.hasPrefix("-") {
                                zoneState[zoneName] = false
                                bad("no zone '\(zoneName)' in this vault (see `receipt zone list`)")
                            } else {
                                zoneState[zoneName] = true
                                plan.newZones.append(zoneName)
                            }
                        } else if zoneState[zoneName] == false {
                            bad("zone '\(zoneName)' cannot take receipts (see line \(plan.receipts[index].firstLine))")
                        }
                    }
                    if let index, let file, let hashed, rowProblems.isEmpty {
                        let name = row[.filename].flatMap { $0.isEmpty ? nil : $0 } ?? Self.lastComponent(given)
                        plan.files.append(ManifestFile(line: row.line, given: given, path: file.path, name: name,
                                                       receipt: index, id: hashed.id, size: file.status.size,
                                                       mediaType: hashed.mediaType, status: file.status, known: hashed.known))
                        plan.bytes += file.status.size
                    }
                    for message in rowProblems { problems.append(ManifestProblem(line: row.line, message: message)) }
                    tally.rowsDone += 1
                    if tally.rowsDone % 256 == 0 { progress?(tally) }
                }
            }
        }
        if !problems.isEmpty { throw ManifestError(file: manifestPath, problems: problems) }
        return plan
    }

    /// The row's file, resolved inside the manifest's folder: relative, no `..`, and no symbolic link
    /// leading out of the folder. Returns the real path and its status (a readable regular file).
    static func confine(_ given: String, folder: String, realFolder: String) throws -> (path: String, status: FileStatus) {
        if given.contains("\0") { throw VaultError.bad("invalid path '\(printable(given))': it contains a NUL byte") }
        if given.hasPrefix("/") {
            throw VaultError.bad("path \(printable(given)) is absolute: paths are relative to the manifest's folder")
        }
        if given.split(separator: "/").contains("..") {
            throw VaultError.bad("path \(printable(given)) leaves the manifest's folder ('..' is not allowed)")
        }
        let joined = FileSystem.join(folder, given)
        guard let real = realPath(joined) else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { throw VaultError.bad("no such file: \(printable(given))") }
            throw VaultError.bad("cannot read \(printable(given)): \(String(cString: strerror(code)))")
        }
        guard real.hasPrefix(realFolder == "/" ? "/" : realFolder + "/") else {
            throw VaultError.bad("path \(printable(given)) leads outside the manifest's folder (through a symbolic link)")
        }
        guard let st = try FileSystem.status(real, followLinks: true) else {
            throw VaultError.bad("no such file: \(printable(given))")
        }
        if st.isDirectory { throw VaultError.bad("\(printable(given)) is a folder, not a file") }
        guard st.isRegular else { throw VaultError.bad("\(printable(given)) is not a regular file (a FIFO, socket or device)") }
        return (real, st)
    }

    /// Hashes the file (or takes the hash from the stat cache when the file is unchanged) and sniffs its
    /// media type. `known`: the catalog already holds the blob.
    private func hashManifestFile(_ db: Database, _ path: String, _ st: FileStatus, name: String,
                                  hasher: SHA256Hasher, chunk: UnsafeMutableRawBufferPointer) throws
        -> (id: BlobID, mediaType: String, known: Bool) {
        try FileDescriptor.with(path, O_RDONLY | O_NONBLOCK) { fd in
            let now = try fd.stat()
            guard now.isRegular else { throw VaultError.bad("not a regular file") }
            let first = try fd.readFully(into: chunk)
            let head = UnsafeRawBufferPointer(rebasing: chunk[..<min(first, 4096)])
            let mediaType = MediaType.of(head: head, filename: name)
            if let entry = try ImportCacheEntry.fetchOne(db, key: path),
               entry.device == Int64(bitPattern: now.device), entry.inode == Int64(bitPattern: now.inode),
               entry.size == now.size, entry.mtimeNs == now.mtimeNanoseconds,
               let id = BlobID(hex: entry.sha256), let blob = try BlobRecord.fetchOne(db, key: entry.sha256),
               blob.isInline || blobs.contains(id) {
                return (id, mediaType, true)
            }
            hasher.update(UnsafeRawBufferPointer(rebasing: chunk[..<first]))
            if first == chunk.count {
                while true {
                    let n = try fd.read(into: chunk)
                    if n == 0 { break }
                    hasher.update(UnsafeRawBufferPointer(rebasing: chunk[..<n]))
                }
            }
            let id = hasher.finalize()
            let known = try BlobRecord.filter(key: id.hex).fetchCount(db) > 0
            return (id, mediaType, known)
        }
    }

    // MARK: - Pass 2: write, in batches (blobs installed before the rows that refer to them commit)

    private func writeManifest(_ plan: ManifestPlan, progress: ((ManifestProgress) -> Void)?) throws -> ImportReport {
        var report = ImportReport()
        var tally = ManifestProgress(phase: .importing, rowsDone: 0, rowsTotal: plan.files.count, bytesDone: 0,
                                     bytesTotal: plan.bytes)
        // Receipts with no file are written with the first batch.
        let fileless = Set(plan.receipts.indices).subtracting(plan.files.map(\.receipt))
        var started = Set<Int>()        // receipts whose row was written
        var nextPosition: [Int: Int] = [:]
        var written = Set<BlobID>()    // blobs this import put in the catalog
        try locked(.shared) {
            var start = plan.files.startIndex
            var first = true
            while start < plan.files.endIndex || first {
                var end = start
                var staged = 0
                var bytes: Int64 = 0
                while end < plan.files.endIndex && end - start < Self.manifestBatchRows
                        && staged < Self.batchFiles && bytes < Self.batchBytes {
                    let f = plan.files[end]
                    if !f.known && f.size >= settings.inlineThreshold { staged += 1; bytes += f.size }
                    end += 1
                }
                let batch = plan.files[start..<end]
                // Read (and stage) the new content of the batch; a file that changed since it was
                // checked is reported and skipped.
                var prepared: [BlobID: PreparedBlob] = [:]
                var failed = Set<Int>()
                defer { for p in prepared.values { if let s = p.staged { blobs.discard(s) } } }
                for (offset, f) in zip(batch.indices, batch) where !f.known && !written.contains(f.id) && prepared[f.id] == nil {
                    do {
                        prepared[f.id] = try readManifestFile(f)
                    } catch {
                        failed.insert(offset)
                        report.failed.append(FailedFile(path: f.given, error: Self.message(error)))
                    }
                }
                let installed = try installStaged(Array(prepared.values))
                let now = nowMillis()
                let isFirst = first
                let results: [ImportedFile] = try catalog.write { db in
                    if isFirst {
                        for name in plan.newZones where try !Zone.exists(db, key: name) {
                            try Zone(name: name, createdAt: now).insert(db)
                        }
                        for index in fileless.sorted() {
                            try writeManifestReceipt(db, plan.receipts[index], at: now)
                            started.insert(index)
                        }
                    }
                    var out: [ImportedFile] = []
                    var recorded = Set<Int>()  // receipts whose outbox entry this batch wrote
                    var touched = Set<Int>()   // receipts that gained an attachment
                    for (offset, f) in zip(batch.indices, batch) where !failed.contains(offset) {
                        var deduplicated = true
                        if !f.known, !written.contains(f.id), let blob = prepared[f.id] {
                            deduplicated = try recordBlob(db, blob, installed: installed[f.id], at: now)
                            written.insert(f.id)
                        }
                        let receipt = plan.receipts[f.receipt]
                        if !receipt.given, !started.contains(f.receipt), let existing = try receiptHolding(db, f.id, named: f.name, in: receipt.zone) {
                            // Without an id, a file already filed under this name in the zone is not added again.
                            out.append(ImportedFile(id: existing, path: f.given, sha256: f.id.hex, size: f.size,
                                                    deduplicated: true, existing: true))
                            continue
                        }
                        if !started.contains(f.receipt) {
                            if try writeManifestReceipt(db, receipt, at: now) { recorded.insert(f.receipt) }
                            started.insert(f.receipt)
                        }
                        var position: Int
                        if let p = nextPosition[f.receipt] {
                            position = p
                        } else {
                            position = (try Int.fetchOne(db, sql: "SELECT max(position) FROM attachments WHERE receiptID = ?",
                                                         arguments: [receipt.id]) ?? -1) + 1
                        }
                        let attachment = Attachment(receiptID: receipt.id, sha256: f.id.hex, filename: f.name,
                                                    mediaType: f.mediaType, position: position)
                        let exists = try attachment.exists(db)
                        if !exists {
                            try attachment.insert(db)
                            position += 1
                            touched.insert(f.receipt)
                        }
                        nextPosition[f.receipt] = position
                        try ImportCacheEntry(path: f.path, device: Int64(bitPattern: f.status.device),
                                             inode: Int64(bitPattern: f.status.inode), size: f.status.size,
                                             mtimeNs: f.status.mtimeNanoseconds, sha256: f.id.hex).save(db)
                        out.append(ImportedFile(id: receipt.id, path: f.given, sha256: f.id.hex, size: f.size,
                                                deduplicated: deduplicated, existing: exists))
                    }
                    for index in touched.subtracting(recorded).sorted() {
                        let receipt = plan.receipts[index]
                        try db.execute(sql: "UPDATE receipts SET modifiedAt = ? WHERE id = ?", arguments: [now, receipt.id])
                        try recordChange(db, receipt.id, zone: receipt.zone, .upsert)
                    }
                    return out
                }
                report.imported += results
                tally.rowsDone = end
                tally.bytesDone += batch.reduce(0) { $0 + $1.size }
                progress?(tally)
                start = end
                first = false
            }
        }
        return report
    }

    /// Inserts a new receipt or applies the manifest's metadata to the existing one. Returns whether
    /// the row changed (its outbox entry is written by the caller, once per batch).
    @discardableResult
    private func writeManifestReceipt(_ db: Database, _ planned: ManifestReceipt, at now: Millis) throws -> Bool {
        if var stored = try Receipt.fetchOne(db, key: planned.id) {
            let before = stored
            planned.metadata.apply(to: &stored)
            guard stored != before else { return false }
            stored.modifiedAt = now
            try stored.update(db)
            try recordChange(db, stored.id, zone: stored.zone, .upsert)
            return true
        }
        var receipt = Receipt(id: planned.id, zone: planned.zone, createdAt: now, modifiedAt: now)
        planned.metadata.apply(to: &receipt)
        try receipt.insert(db)
        try recordChange(db, receipt.id, zone: receipt.zone, .upsert)
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
                guard id == f.id, n <= st.size else {
                    throw VaultError.bad("\(f.given) changed while it was being imported (it now hashes to \(id))")
                }
                return PreparedBlob(id: id, size: Int64(n), mediaType: f.mediaType, inline: bytes, staged: nil, cached: false)
            }
            do {
                let staged = try blobs.stage(from: fd, compression: settings.compression, expected: f.id)
                return PreparedBlob(id: staged.id, size: staged.size, mediaType: f.mediaType, inline: nil,
                                    staged: staged, cached: false)
            } catch BlobError.mismatch(_, let actual) {
                throw VaultError.bad("\(f.given) changed while it was being imported (it now hashes to \(actual))")
            }
        }
    }

    // MARK: - Helpers

    static func realPath(_ path: String) -> String? {
        guard let resolved = Glibc.realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    static func lastComponent(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
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
