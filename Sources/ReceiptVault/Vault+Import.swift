import BlobStore
import Foundation
import GRDB
import ReceiptCatalog

public struct ImportedFile: Codable, Sendable, Equatable {
    public var id: ReceiptID
    public var path: String
    public var sha256: String
    public var size: Int64
    /// The blob was already in the vault: no new bytes were stored.
    public var deduplicated: Bool
    /// The same file (name and content) was already a receipt of this zone: nothing was added.
    public var existing: Bool
    /// Receipts this new one may duplicate (a re-scan, or the same merchant, date and total): set by
    /// `import` after its text is read, absent when none.
    public var possibleDuplicateOf: [ReceiptID]?
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

/// A regular file to import.
public struct InputFile: Sendable {
    public let path: String
    public let size: Int64
    /// As it was listed: the import stat cache keys on it. nil for a file a manifest row checked.
    public let status: FileStatus?
    /// What a manifest's pass 1 found the file to hold: its bytes must still hash to `id`.
    let checked: Checked?
    /// A watched file's: whether it is still as it was judged complete (asked after its read, just
    /// before its batch commits; false rolls the batch back).
    var unchanged: (@Sendable () -> Bool)? = nil

    struct Checked: Sendable {
        let id: BlobID
        let mediaType: String
    }

    init(path: String, status: FileStatus) {
        self.path = path
        self.status = status
        size = status.size
        checked = nil
    }

    init(checked path: String, size: Int64, id: BlobID, mediaType: String) {
        self.path = path
        self.size = size
        status = nil
        checked = Checked(id: id, mediaType: mediaType)
    }

    /// The name it is filed under: the last component of its path.
    public var name: String { path.split(separator: "/").last.map(String.init) ?? path }
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
                                   bytesTotal: inputs.reduce(0) { $0 + $1.size })
        do {
            try wrapped {
                try ingest(inputs, source: { .file($0) },
                           failed: { input, error in
                               // An unreadable file is reported and the others go on; anything else stops the import.
                               guard let error = error as? PathError else { throw error }
                               report.failed.append(FailedFile(path: input.path, error: error.description))
                               return error.description
                           },
                           rows: { w, batch in try self.insertImported(w, batch, zone: zone, metadata: metadata) },
                           committed: { imported, done in
                               report.imported += imported
                               tally.bytesDone += inputs[tally.filesDone..<done].reduce(0) { $0 + $1.size }
                               tally.filesDone = done
                               progress?(tally)
                           })
            }
        } catch {
            throw VaultError.partial(error, done: report.imported.isEmpty ? nil : "\(report.imported.count) of the \(inputs.count) files "
                + "were imported before it failed (in the vault now: see `receipt list`); the others were not")
        }
        return report
    }

    /// The receipts of one batch of imported files (a file whose name and content are a receipt of
    /// the zone already is reported as `existing`).
    func insertImported(_ w: CatalogWriter, _ batch: [(InputFile, IngestOutcome)], zone: String,
                                metadata: ReceiptMetadata) throws -> [ImportedFile] {
        var out: [ImportedFile] = []
        for case (let input, .ingested(let blob)) in batch {
            if let existing = try Catalog.receipt(w.db, holding: blob.id, named: input.name, inZone: zone) {
                out.append(ImportedFile(id: existing, path: input.path, sha256: blob.id.hex, size: blob.size,
                                        deduplicated: true, existing: true))
                continue
            }
            var receipt = Receipt(id: ReceiptID.generate(), zone: zone, createdAt: w.now, modifiedAt: w.now)
            metadata.apply(to: &receipt)
            try w.addReceipt(receipt)
            _ = try w.insertAttachment(receiptID: receipt.id, blob: blob.id, size: blob.size, filename: input.name, mediaType: blob.mediaType,
                                       position: 0)
            if let status = input.status { try w.rememberImport(path: input.path, status: status, blob: blob.id) }
            out.append(ImportedFile(id: receipt.id, path: input.path, sha256: blob.id.hex, size: blob.size,
                                    deduplicated: blob.deduplicated, existing: false))
        }
        return out
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
        do { names = try FileSystem.contents(of: folder).sorted() } catch let error as PathError {
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
