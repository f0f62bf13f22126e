import BlobStore
import CSV
import Foundation
import MediaTypes
import ReceiptCatalog
import ReceiptWire
#if canImport(Glibc)
import Glibc
#endif

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
public struct ExportItem: Sendable {
    public let receipt: String
    public let sha256: String
    public let size: Int64
    /// Its path in the export (`Vault.exportItems`).
    public let name: String
}

extension ReceiptView {
    /// A receipt of a server's zone `zone` in the `list` shape, for exports made from the server's
    /// records (the web view's download): the same names, manifest and listing as the vault's.
    public init(id: String, zone: String, wire r: WireReceipt) {
        self.init(id: id, zone: zone, merchant: r.merchant, date: r.date, total: r.total, currency: r.currency,
                  category: r.category, note: r.note, tags: r.tags,
                  attachments: r.attachments.map { File(sha256: $0.sha256, filename: $0.filename, size: $0.size, mediaType: $0.mediaType) },
                  status: r.status ?? ClaimStatus.none.rawValue, claim: r.claim, reimbursedOn: r.reimbursedOn)
    }
}

extension Vault {
    public static let exportManifestName = "manifest.csv"
    public static let exportListName = "receipts.json"

    /// Writes the matching receipts' attachments (original, verified bytes) under readable names such
    /// as `2025/03/2025-03-04_acme_1f2e3d4c.pdf`, plus `manifest.csv` (importable with
    /// `importManifest`) and `receipts.json` (the `list` shape), into `destination`: a new or empty
    /// folder, or with `zip` a zip file that must not exist. Names are built only from safe
    /// characters, so nothing is written outside the destination whatever the metadata holds; every
    /// file and folder is created owner-only, never through a symbolic link nor over anything another
    /// program put there meanwhile (`ExportFolder`). A missing or corrupt blob is reported in `failed`
    /// and the rest is still exported. The export is durable on return.
    public func export(to destination: String, filter: ReceiptScope = ReceiptScope(), zip: Bool = false,
                       for purpose: ExportPurpose = .plain,
                       progress: (@Sendable (ExportProgress) -> Void)? = nil) throws -> ExportReport {
        var destination = absolute(destination)
        while destination.count > 1 && destination.hasSuffix("/") { destination.removeLast() }
        let checked = try checkDestination(destination, zip: zip)
        let receipts = try list(filter)
        let items = Self.exportItems(receipts, for: purpose)
        var tally = ExportProgress(filesDone: 0, filesTotal: items.count, bytesDone: 0,
                                   bytesTotal: items.reduce(0) { $0 + $1.size })
        let failures: [ExportFailure]
        if zip {
            failures = try wrapped { try exportZip(destination, receipts: receipts, items: items, purpose: purpose,
                                                   tally: &tally, progress: progress) }
        } else {
            failures = try wrapped { try exportFolder(destination, checked: checked, receipts: receipts, items: items,
                                                      purpose: purpose, tally: &tally, progress: progress) }
        }
        let failedKeys = Set(failures.map { $0.receipt + "/" + $0.sha256 })
        let files = items.filter { !failedKeys.contains($0.receipt + "/" + $0.sha256) }
            .map { ExportedFile(receipt: $0.receipt, sha256: $0.sha256, path: $0.name, size: $0.size) }
        return ExportReport(destination: destination, zip: zip, receipts: receipts.count, files: files,
                            failed: failures, bytes: files.reduce(0) { $0 + $1.size })
    }

    // MARK: - Folder

    private func exportFolder(_ destination: String, checked: FileStatus?, receipts: [ReceiptView], items: [ExportItem],
                              purpose: ExportPurpose, tally: inout ExportProgress,
                              progress: (@Sendable (ExportProgress) -> Void)?) throws -> [ExportFailure] {
        let root = try openExportFolder(destination, checked: checked)
        let folders = try Self.makeFolders(for: items.map(\.name), in: root)
        /// The folder an item's file goes in, and its name there.
        let place: @Sendable (String) -> (folder: ExportFolder, name: String) = { name in
            let parent = FileSystem.parentPath(name)
            return (folders[parent == "." ? "" : parent] ?? root, Self.lastComponent(name))
        }

        // Both cores, on different files: copying and verifying (hashing) one file is one core's work;
        // two threads per core, so one hashes while the other waits for a direct read or write.
        let state = ExportState(tally)
        // One thread creates the files, a few ahead of the copies: creating takes the folder's lock in
        // the kernel, and threads that find it taken spin on it while its holder runs. After a mass
        // delete, ext4's `recently_deleted()` makes each creation slow, and four threads creating in one
        // folder spent a quarter of their CPU spinning (the export took 1.2× `cp -r`).
        let created = Parallel.Ahead(count: items.count, limit: 64) { index in
            let (folder, name) = place(items[index].name)
            return Result { try folder.makeFile(name) }
        }
        let outcomes = Parallel.map(Array(items.indices), workers: 2 * Parallel.cores) { index in
            let item = items[index]
            let out = try created.take(index).get()
            defer { out.close() }
            do {
                try self.copyExported(item.sha256, into: out)
                state.done(item, failure: nil, progress: progress)
            } catch {
                // The file was created before its blob was read: no failure may leave it behind.
                let (folder, name) = place(item.name)
                folder.remove(name)
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
            try root.writeFile(name, data)
        }
        // One syncfs for every file and folder written, then the folder's own entry.
        try Self.syncFileSystem(of: root)
        try FileSystem.syncDirectory(FileSystem.parentPath(destination))
        return failures
    }

    /// Deflate pays for text; PDFs, images and archives are mostly compressed already.
    static func compressible(_ name: String) -> Bool {
        ["txt", "csv", "json", "html", "htm", "xml", "eml"].contains(extensionOf(name) ?? "")
    }

    // MARK: - Names, manifest, listing

    /// Where each attachment of `receipts` (in `list` order) goes in an export for `purpose`.
    public static func exportItems(_ receipts: [ReceiptView], for purpose: ExportPurpose) -> [ExportItem] {
        purpose == .claim ? claimNames(receipts) : exportNames(receipts)
    }

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
    /// Cells a spreadsheet would run are written as text (`SpreadsheetCell`); import reads them back.
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
                if files.isEmpty { try writer.write(row: row("", "", "").map(SpreadsheetCell.written)) }
                for item in files {
                    guard let a = r.attachments.first(where: { $0.sha256 == item.sha256 }) else { continue }
                    try writer.write(row: row(item.name, a.filename, a.sha256).map(SpreadsheetCell.written))
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
