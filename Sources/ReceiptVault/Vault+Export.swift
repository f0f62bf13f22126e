import BlobStore
import Foundation
// The export's layout and the types `list`, `show` and `export` return (`ReceiptView`, `ExportPurpose`,
// ...) live below the vault, shared with the server's web download: part of the vault's API.
@_exported import ReceiptExportLayout
import ReceiptCatalog
#if canImport(Glibc)
import Glibc
#endif

public struct ExportedFile: Codable, Sendable, Equatable {
    public var receipt: String
    public var sha256: String
    /// Relative to the export folder (or the zip's root).
    public var path: String
    public var size: Int64
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

extension Vault {
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
        let items = ExportLayout.exportItems(receipts, for: purpose)
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
            return (folders[parent == "." ? "" : parent] ?? root, FileSystem.lastComponent(name))
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
                case let error as MissingExportBlob: state.done(item, failure: error.description, progress: progress)
                default: throw error
                }
            }
        }
        for case .failure(let error) in outcomes { throw error }
        tally = state.tally
        let failures = state.failures.sorted { ($0.receipt, $0.sha256) < ($1.receipt, $1.sha256) }
        for (name, data) in try ExportLayout.closingFiles(receipts, items: items, failures: failures, purpose: purpose) {
            try root.writeFile(name, data)
        }
        // One syncfs for every file and folder written, then the folder's own entry.
        try Self.syncFileSystem(of: root)
        try FileSystem.syncDirectory(FileSystem.parentPath(destination))
        return failures
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
