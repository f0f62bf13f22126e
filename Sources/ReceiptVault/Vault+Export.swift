import BlobStore
import CSV
import Foundation
import MediaTypes
import ReceiptCatalog
import ZIPFoundation
#if canImport(Glibc)
import Glibc
#endif

/// Which receipts an export takes.
public struct ExportFilter: Sendable {
    public var zone: String?
    public var from: String?
    public var to: String?
    public var category: String?
    public var status: String?

    public init(zone: String? = nil, from: String? = nil, to: String? = nil, category: String? = nil, status: String? = nil) {
        self.zone = zone
        self.from = from
        self.to = to
        self.category = category
        self.status = status
    }
}

/// Who an export is for: `plain` (folders by month) or `claim`, a package an accountant or insurer
/// accepts (numbered files, index.csv, summary.txt, SHA256SUMS; see Vault+ClaimPackage.swift).
public enum ExportPurpose: String, Sendable, CaseIterable {
    case plain, claim
}

public struct ExportedFile: Codable, Sendable, Equatable {
    public var receipt: String
    public var sha256: String
    /// Relative to the export folder (or the zip's root).
    public var path: String
    public var size: Int64
}

public struct ExportFailure: Codable, Sendable, Equatable {
    public var receipt: String
    public var sha256: String
    public var error: String
}

public struct ExportReport: Codable, Sendable, Equatable {
    public var destination: String
    public var zip: Bool
    public var receipts: Int
    public var files: [ExportedFile]
    public var failed: [ExportFailure]
    public var bytes: Int64
}

/// Files and bytes exported so far (the same counters as an import's).
public typealias ExportProgress = ImportProgress

/// One attachment to export: where it goes and what it is.
struct ExportItem: Sendable {
    let receipt: String
    let sha256: String
    let size: Int64
    let name: String
}

extension Vault {
    public static let exportManifestName = "manifest.csv"
    public static let exportListName = "receipts.json"

    /// Writes the matching receipts' attachments (original, verified bytes) under readable names such
    /// as `2025/03/2025-03-04_acme_1f2e3d4c.pdf`, plus `manifest.csv` (importable with
    /// `importManifest`) and `receipts.json` (the `list` shape), into `destination`: a new or empty
    /// folder, or with `zip` a zip file that must not exist. Names are built only from safe
    /// characters, so nothing is written outside the destination whatever the metadata holds.
    /// A missing or corrupt blob is reported in `failed` and the rest is still exported. The export
    /// is durable on return.
    public func export(to destination: String, filter: ExportFilter = ExportFilter(), zip: Bool = false,
                       for purpose: ExportPurpose = .plain,
                       progress: (@Sendable (ExportProgress) -> Void)? = nil) throws -> ExportReport {
        let destination = absolute(destination)
        try checkDestination(destination, zip: zip)
        let receipts = try list(ListFilter(zone: filter.zone, from: filter.from, to: filter.to, category: filter.category,
                                           status: filter.status))
        let items = purpose == .claim ? Self.claimNames(receipts) : Self.exportNames(receipts)
        var tally = ExportProgress(filesDone: 0, filesTotal: items.count, bytesDone: 0,
                                   bytesTotal: items.reduce(0) { $0 + $1.size })
        let failures: [ExportFailure]
        if zip {
            failures = try wrapped { try exportZip(destination, receipts: receipts, items: items, purpose: purpose,
                                                   tally: &tally, progress: progress) }
        } else {
            failures = try wrapped { try exportFolder(destination, receipts: receipts, items: items, purpose: purpose,
                                                      tally: &tally, progress: progress) }
        }
        let failedKeys = Set(failures.map { $0.receipt + "/" + $0.sha256 })
        let files = items.filter { !failedKeys.contains($0.receipt + "/" + $0.sha256) }
            .map { ExportedFile(receipt: $0.receipt, sha256: $0.sha256, path: $0.name, size: $0.size) }
        return ExportReport(destination: destination, zip: zip, receipts: receipts.count, files: files,
                            failed: failures, bytes: files.reduce(0) { $0 + $1.size })
    }

    /// The destination must be a new or empty folder, or (zip) a file that does not exist yet in an
    /// existing folder. Checked before anything is written.
    private func checkDestination(_ destination: String, zip: Bool) throws {
        // Not inside the vault, where the files would be strangers to fsck and gc.
        var existing = destination
        while Self.realPath(existing) == nil && existing != "/" && existing != "." { existing = FileSystem.parentPath(existing) }
        if let real = Self.realPath(existing), let vaultReal = Self.realPath(path), real == vaultReal || real.hasPrefix(vaultReal + "/") {
            throw VaultError.bad("cannot export to \(destination): it is inside the vault \(path)")
        }
        let st = try wrapped { try FileSystem.status(destination, followLinks: true) }
        if zip {
            guard destination.lowercased().hasSuffix(".zip") else {
                throw VaultError.bad("cannot export to \(destination): with --zip, give the name of a .zip file to create")
            }
            if st != nil || (try? FileSystem.status(destination)) ?? nil != nil {
                throw VaultError.bad("cannot export to \(destination): the file already exists (nothing was written)")
            }
            let parent = FileSystem.parentPath(destination)
            guard let pst = try? FileSystem.status(parent, followLinks: true), pst.isDirectory else {
                throw VaultError.bad("cannot export to \(destination): no folder \(parent)")
            }
            return
        }
        guard let st else {
            if (try? FileSystem.status(destination)) ?? nil != nil {
                throw VaultError.bad("cannot export to \(destination): it is a dangling symbolic link")
            }
            return
        }
        guard st.isDirectory else {
            throw VaultError.bad("cannot export to \(destination): it exists and is not a folder")
        }
        let contents = try wrapped { try FileSystem.contents(of: destination) }
        if !contents.isEmpty {
            throw VaultError.bad("cannot export to \(destination): the folder is not empty (nothing was written)")
        }
    }

    // MARK: - Folder

    private func exportFolder(_ destination: String, receipts: [ReceiptView], items: [ExportItem], purpose: ExportPurpose,
                              tally: inout ExportProgress, progress: (@Sendable (ExportProgress) -> Void)?) throws -> [ExportFailure] {
        try FileSystem.makeDirectories(destination)
        var folders = Set<String>()
        for item in items {
            let parent = FileSystem.parentPath(item.name)
            if parent != "." { folders.insert(parent) }
        }
        for folder in folders.sorted() { try FileSystem.makeDirectories(FileSystem.join(destination, folder)) }

        // Both cores, on different files: copying and verifying (hashing) one file is one core's work;
        // two threads per core, so one hashes while the other waits for a direct read or write.
        let state = ExportState(tally)
        // One thread creates the files, a few ahead of the copies: creating takes the folder's lock in
        // the kernel, and threads that find it taken spin on it while its holder runs. After a mass
        // delete, ext4's `recently_deleted()` makes each creation slow, and four threads creating in one
        // folder spent a quarter of their CPU spinning (the export took 1.2× `cp -r`).
        let created = Parallel.Ahead(count: items.count, limit: 64) { index in
            Result { try FileDescriptor.open(FileSystem.join(destination, items[index].name),
                                             O_WRONLY | O_CREAT | O_EXCL, mode: 0o644) }
        }
        let outcomes = Parallel.map(Array(items.indices), workers: 2 * Parallel.cores) { index in
            let item = items[index]
            let out = try created.take(index).get()
            defer { out.close() }
            do {
                try self.copyBlob(try self.blobRecord(item.sha256), into: out)
                state.done(item, failure: nil, progress: progress)
            } catch {
                // The file was created before its blob was read: no failure may leave it behind.
                try? FileSystem.remove(out.path)
                switch error {
                case let error as BlobError: state.done(item, failure: error.description, progress: progress)
                case let error as VaultError where error.kind == .notFound: state.done(item, failure: error.message, progress: progress)
                default: throw error
                }
            }
        }
        for case .failure(let error) in outcomes { throw error }
        tally = state.tally
        let failures = state.failures.sorted { ($0.receipt, $0.sha256) < ($1.receipt, $1.sha256) }
        for (name, data) in try Self.closingFiles(receipts, items: items, failures: failures, purpose: purpose) {
            try Self.writeNew(FileSystem.join(destination, name), data)
        }
        // One syncfs for every file and folder written, then the folder's own entry.
        try FileSystem.syncFileSystem(containing: destination)
        try FileSystem.syncDirectory(FileSystem.parentPath(destination))
        return failures
    }

    private static func writeNew(_ path: String, _ data: Data) throws {
        try FileDescriptor.with(path, O_WRONLY | O_CREAT | O_EXCL, mode: 0o644) { fd in
            try data.withUnsafeBytes { try fd.write($0) }
        }
    }

    // MARK: - Zip

    private func exportZip(_ destination: String, receipts: [ReceiptView], items: [ExportItem], purpose: ExportPurpose,
                           tally: inout ExportProgress, progress: (@Sendable (ExportProgress) -> Void)?) throws -> [ExportFailure] {
        let folder = FileSystem.parentPath(destination)
        let base = Self.lastComponent(destination)
        let token = SecureRandom.hex(6)
        let partial = FileSystem.join(folder, ".\(base).\(token).partial")
        let scratch = FileSystem.join(folder, ".\(base).\(token).files")
        try FileSystem.makeDirectories(scratch)
        defer {
            for name in (try? FileSystem.contents(of: scratch)) ?? [] { try? FileSystem.remove(FileSystem.join(scratch, name)) }
            _ = Glibc.rmdir(scratch)
            try? FileSystem.remove(partial)
        }
        let archive: Archive
        do {
            archive = try Archive(url: URL(fileURLWithPath: partial), accessMode: .create)
        } catch {
            throw VaultError(.io, "cannot create the zip file \(destination): \(error)")
        }
        var failures: [ExportFailure] = []
        for (index, item) in items.enumerated() {
            // The verified bytes go to a scratch file first, so a corrupt blob never reaches the zip.
            let copy = FileSystem.join(scratch, String(index))
            do {
                try copyBlob(try blobRecord(item.sha256), to: copy)
            } catch let error as BlobError {
                failures.append(ExportFailure(receipt: item.receipt, sha256: item.sha256, error: error.description))
                continue
            } catch let error as VaultError where error.kind == .notFound {
                failures.append(ExportFailure(receipt: item.receipt, sha256: item.sha256, error: error.message))
                continue
            }
            try FileDescriptor.with(copy, O_RDONLY) { fd in
                try addZipEntry(archive, item.name, size: item.size, mediaType: Self.compressible(item.name),
                                destination: destination) { position, size in
                    var data = Data(count: size)
                    let n = try data.withUnsafeMutableBytes { try fd.read(into: $0, at: position) }
                    if n < size { data.removeLast(size - n) }
                    return data
                }
            }
            try FileSystem.remove(copy)
            tally.filesDone += 1
            tally.bytesDone += item.size
            progress?(tally)
        }
        for (name, data) in try Self.closingFiles(receipts, items: items, failures: failures, purpose: purpose) {
            try addZipEntry(archive, name, size: Int64(data.count), mediaType: true, destination: destination) { position, size in
                let start = Int(position)
                return data.subdata(in: start..<min(start + size, data.count))
            }
        }
        try FileDescriptor.with(partial, O_RDONLY) { try $0.sync() }
        // link() fails if the name was taken meanwhile: an existing file is never replaced.
        do {
            try FileSystem.link(partial, destination)
        } catch let error as PathError where error.errno == EEXIST {
            throw VaultError.bad("cannot export to \(destination): the file already exists (nothing was written)")
        } catch let error as PathError {
            throw PathError("creating", path: destination, errno: error.errno)
        }
        try FileSystem.remove(partial)
        try FileSystem.syncDirectory(folder)
        return failures
    }

    private func addZipEntry(_ archive: Archive, _ name: String, size: Int64, mediaType compress: Bool, destination: String,
                             provider: (Int64, Int) throws -> Data) throws {
        do {
            try archive.addEntry(with: name, type: .file, uncompressedSize: size, permissions: 0o644,
                                 compressionMethod: compress ? .deflate : .none, provider: provider)
        } catch let error as PathError {
            throw error
        } catch {
            throw VaultError(.io, "cannot write \(name) into the zip file \(destination): \(error)")
        }
    }

    /// Deflate pays for text; PDFs, images and archives are mostly compressed already.
    static func compressible(_ name: String) -> Bool {
        ["txt", "csv", "json", "html", "htm", "xml", "eml"].contains(extensionOf(name) ?? "")
    }

    // MARK: - Names, manifest, listing

    /// A safe relative path for every attachment: `YYYY/MM/YYYY-MM-DD_merchant_idprefix[_n].ext`, or
    /// `undated/merchant_idprefix[_n].ext`. Only `[a-z0-9._-]` and `/` between the generated folders;
    /// names are unique (case-insensitively).
    static func exportNames(_ receipts: [ReceiptView]) -> [ExportItem] {
        var taken = Set<String>([exportManifestName, exportListName])
        var items: [ExportItem] = []
        for r in receipts {
            let day = r.date.flatMap { try? Validate.date($0) }
            let folder = day.map { "\($0.prefix(4))/\($0.dropFirst(5).prefix(2))" } ?? "undated"
            let idPart = Self.slug(String(r.id.prefix(8)), fallback: "receipt")
            for (n, a) in r.attachments.enumerated() {
                let stem = (day.map { $0 + "_" } ?? "") + Self.nameSlug(r, a) + "_" + idPart
                let ext = Self.safeExtension(a.filename, mediaType: a.mediaType)
                let numbered = r.attachments.count > 1 ? "\(stem)_\(n + 1)" : stem
                var name = "\(folder)/\(numbered).\(ext)"
                var k = 2
                while taken.contains(name.lowercased()) {
                    name = "\(folder)/\(numbered)-\(k).\(ext)"
                    k += 1
                }
                taken.insert(name.lowercased())
                items.append(ExportItem(receipt: r.id, sha256: a.sha256, size: a.size, name: name))
            }
        }
        return items
    }

    /// The merchant's name, or for a receipt without one the attachment's original file name (its
    /// stem): `changelog_fff64f7a.pdf`, never a bare `receipt_fff64f7a.pdf`.
    static func nameSlug(_ r: ReceiptView, _ a: ReceiptView.File) -> String {
        let merchant = slug(r.merchant ?? "", fallback: "")
        if !merchant.isEmpty { return merchant }
        let last = lastComponent(a.filename)
        let stem = last.lastIndex(of: ".").map { $0 == last.startIndex ? last : String(last[..<$0]) } ?? last
        return slug(stem, fallback: "receipt")
    }

    /// Lowercase ASCII letters and digits, runs of anything else turned into one `-`, at most 40
    /// characters; diacritics folded (Café → cafe).
    static func slug(_ text: String, fallback: String) -> String {
        let folded = text.folding(options: [.diacriticInsensitive, .caseInsensitive], locale: nil)
        var out = ""
        var dash = false
        for scalar in folded.unicodeScalars {
            if scalar.isASCII && CharacterSet.alphanumerics.contains(scalar) {
                if dash && !out.isEmpty { out.append("-") }
                dash = false
                out.append(Character(String(scalar).lowercased()))
                if out.count >= 40 { break }
            } else {
                dash = true
            }
        }
        return out.isEmpty ? fallback : out
    }

    static func extensionOf(_ name: String) -> String? {
        let last = lastComponent(name)
        guard let dot = last.lastIndex(of: "."), dot != last.startIndex else { return nil }
        let ext = last[last.index(after: dot)...].lowercased()
        guard (1...8).contains(ext.count), ext.unicodeScalars.allSatisfy({ $0.isASCII && CharacterSet.alphanumerics.contains($0) })
        else { return nil }
        return ext
    }

    static func safeExtension(_ filename: String, mediaType: String) -> String {
        extensionOf(filename) ?? MediaType.fileExtension(for: mediaType) ?? "bin"
    }

    /// `manifest.csv`: one row per exported attachment (paths relative to the export), and one row
    /// without path for a receipt that has no attachment, so every receipt comes back on import.
    static func exportManifest(_ receipts: [ReceiptView], items: [ExportItem], failures: [ExportFailure]) throws -> Data {
        let failed = Set(failures.map { $0.receipt + "/" + $0.sha256 })
        let stream = OutputStream(toMemory: ())
        let columns: [ManifestColumn] = [.path, .id, .zone, .date, .merchant, .total, .currency, .category, .note,
                                         .tags, .filename, .sha256, .status, .claim, .reimbursedOn]
        do {
            let writer = try CSVWriter(stream: stream, newline: .crlf)
            try writer.write(row: columns.map(\.rawValue))
            var byReceipt: [String: [ExportItem]] = [:]
            for item in items where !failed.contains(item.receipt + "/" + item.sha256) {
                byReceipt[item.receipt, default: []].append(item)
            }
            for r in receipts {
                func row(_ path: String, _ filename: String, _ sha256: String) -> [String] {
                    columns.map { c in
                        switch c {
                        case .path: return path
                        case .id: return r.id
                        case .zone: return r.zone
                        case .date: return r.date ?? ""
                        case .merchant: return r.merchant ?? ""
                        case .total: return r.total ?? ""
                        case .currency: return r.currency ?? ""
                        case .category: return r.category ?? ""
                        case .note: return r.note ?? ""
                        case .tags: return r.tags.joined(separator: ";")
                        case .filename: return filename
                        case .sha256: return sha256
                        case .status: return r.status
                        case .claim: return r.claim ?? ""
                        case .reimbursedOn: return r.reimbursedOn ?? ""
                        }
                    }
                }
                let files = byReceipt[r.id] ?? []
                if files.isEmpty { try writer.write(row: row("", "", "")) }
                for item in files {
                    guard let a = r.attachments.first(where: { $0.sha256 == item.sha256 }) else { continue }
                    try writer.write(row: row(item.name, a.filename, a.sha256))
                }
            }
            writer.stream.close()
        } catch {
            throw VaultError(.io, "cannot write the export's manifest: \(error)")
        }
        guard var data = stream.property(forKey: .dataWrittenToMemoryStreamKey) as? Data else {
            throw VaultError(.io, "cannot write the export's manifest")
        }
        data.append(contentsOf: [0x0D, 0x0A])
        return data
    }

    /// `receipts.json`: the `list --json` shape.
    static func exportListing(_ receipts: [ReceiptView]) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        var data = try encoder.encode(receipts)
        data.append(0x0A)
        return data
    }
}

/// Results of the export threads, behind a lock.
private final class ExportState: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var tally: ExportProgress
    private(set) var failures: [ExportFailure] = []

    init(_ tally: ExportProgress) { self.tally = tally }

    func done(_ item: ExportItem, failure: String?, progress: (@Sendable (ExportProgress) -> Void)?) {
        lock.lock()
        defer { lock.unlock() }
        if let failure {
            failures.append(ExportFailure(receipt: item.receipt, sha256: item.sha256, error: failure))
        } else {
            tally.bytesDone += item.size
        }
        tally.filesDone += 1
        progress?(tally)
    }
}
