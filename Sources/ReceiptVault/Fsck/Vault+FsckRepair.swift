import BlobStore
import Foundation
import MediaTypes
import ReceiptCatalog

extension Vault {
    static let recoveredNote = "recovered by `receipt fsck --repair`: the catalog had lost this receipt's record"

    /// The repair (docs/DESIGN.md, "fsck"): takes the problems `check` found and fixes each by its
    /// kind — blobs back through the ingest path (fetched from the sync server, or a good file
    /// adopted), bad files into quarantine/ (never deleted), rows as the files are. Each problem goes
    /// to `sink` once its repair was tried, saying what was done. The caller holds the vault lock
    /// exclusively.
    static func repair(_ problems: [FsckProblem], at path: String, options: FsckOptions, sink: FsckSink) async throws {
        if let broken = problems.first(where: { if case .rebuildCatalog = $0.fix { true } else { false } }),
           case .rebuildCatalog(let why) = broken.fix {
            // Everything else found was about the catalog that is being replaced: the new one is
            // checked again, and what that finds is repaired (it is never rebuilt twice in a run).
            let summary = try await rebuildCatalog(vaultPath: path, store: BlobStore(root: path), options: options, sink: sink)
            sink.emit(FsckProblem(.catalog, path: broken.path, detail: why + "; " + summary, repaired: true))
            let again = FsckSink(onProblem: { _ in }, onProgress: sink.onProgress)
            try await check(at: path, options: options, sink: again)
            sink.absorbCounts(again)
            let left = again.problems.map { problem in
                var problem = problem
                if case .rebuildCatalog = problem.fix { problem.fix = nil }
                return problem
            }
            return try await repair(left, at: path, options: options, sink: sink)
        }
        let vault: Vault
        do { vault = try Vault.open(at: path) } catch { throw VaultError.wrap(error) }
        defer { try? vault.close() }
        var removedStaging = false
        func fix(_ problems: [FsckProblem]) async throws {
            for var problem in problems {
                do {
                    if problem.fix == .removeStaging { removedStaging = true }
                    try await vault.repair(&problem, options)
                } catch let error as CancellationError {
                    throw error
                } catch {
                    throw VaultError.wrap(error)
                }
                sink.emit(problem)
            }
        }
        try await fix(problems.filter { $0.kind != .permissions })
        if removedStaging { try? FileSystem.syncDirectory(vault.blobs.interimPath) }
        // Permissions last, and looked at again: a file moved into quarantine/ kept its own.
        let permissions = FsckSink(onProblem: { _ in }, onProgress: { _ in })
        checkPermissions(vaultPath: path, sink: permissions)
        try await fix(permissions.problems)
    }

    /// Fixes one problem (when its kind can be fixed), saying in its detail what was done.
    private func repair(_ problem: inout FsckProblem, _ options: FsckOptions) async throws {
        guard let fix = problem.fix else { return }
        switch fix {
        case .rebuildCatalog:
            problem.detail += "; the new catalog cannot be used either"
        case .rebuildSearchIndex(let found):
            try catalog.rebuildSearchIndex()
            problem.detail = found + ": rebuilt it from the catalog and the stored text"
            problem.repaired = true
        case .resizeAttachments(let found):
            let changed = try catalog.transaction { w in try w.resizeAttachments() }
            problem.detail = found + ": \(changed) given their blob's size"
            problem.repaired = true
        case .reidentifyAttachments(let found):
            let changed = try catalog.transaction { w in try w.reidentifyAttachments() }
            problem.detail = found + ": \(changed) given their receipt's id"
            problem.repaired = true
        case .recount(let found):
            try catalog.recountKeptCounts()
            problem.detail = found + ": recounted"
            problem.repaired = true
        case .tighten(let paths, let found):
            let failed = Self.tighten(paths)
            problem.detail = found + (failed.isEmpty ? ": now readable by the owner only" : ": \(failed.count) could not be changed")
            problem.repaired = failed.isEmpty
        case .recreateZone(let zone):
            try catalog.transaction { w in try w.ensureZone(zone) }
            problem.repaired = true
            problem.detail += "; the zone was recreated"
        case .recreateReceipt(let receipt):
            try catalog.transaction { w in
                try w.ensureZone(Zone.recovered)
                try w.insertRecoveredReceipt(id: receipt, zone: Zone.recovered, note: Self.recoveredNote, row: try w.receiptRow(ofLost: receipt))
            }
            problem.repaired = true
            problem.detail += "; the receipt was recreated in zone '\(Zone.recovered)'"
        case .rerecord(let id, let encoding, let size, let storedSize):
            try catalog.transaction { w in try w.rerecordBlob(id, size: size, storedSize: storedSize, encoding: encoding) }
            problem.repaired = true
            problem.detail += "; the catalog now records the file as it is"
        case .dropRow(let id):
            guard !FileSystem.exists(blobs.path(for: id)) else { return }
            try catalog.transaction { w in try w.deleteBlobIfUnreferenced(id) }
            problem.repaired = true
            problem.detail += "; its row was removed"
        case .refetch(let id, let inline):
            if !inline, FileSystem.exists(blobs.path(for: id)) { quarantineInto(&problem, blobs.path(for: id), repairedByMove: false) }
            // The row is recorded as the file fetched back is (an inline one keeps its size).
            if try await refetch(id, options, rows: { w, staged in
                try w.rerecordBlob(id, size: inline ? nil : staged.size, storedSize: staged.storedSize, encoding: staged.encoding)
            }) {
                problem.repaired = true
                problem.detail += "; fetched back from the sync server"
            } else if inline {
                problem.detail += "; no sync server could give it back"
            } else {
                problem.detail += options.refetcher == nil
                    ? "; no sync server is set to fetch it back from" : "; the sync server could not give it back"
            }
        case .restoreRow(let id):
            if let verified = try? blobs.verifyEitherEncoding(id), (try? blobs.storedSize(of: id)) != nil {
                try ingestOnce([.adopted(verified)]) { _, _ in }
                problem.repaired = true
                problem.detail += "; its file is good and is recorded again"
            } else if try await refetch(id, options, rows: { _, _ in }) {
                problem.repaired = true
                problem.detail += "; fetched back from the sync server"
            } else {
                problem.detail += "; no file and no sync server could give it back (the receipt is kept)"
            }
        case .adoptOrphan(let id):
            if let verified = try? blobs.verifyEitherEncoding(id) {
                let receipt = try adoptIntoRecovered([verified])
                problem.receipts = receipt.map(\.text)
                problem.receipt = receipt.first?.text
                problem.repaired = true
                problem.detail += "; kept as an attachment of receipt \(receipt.first?.text ?? "?") in zone '\(Zone.recovered)'"
            } else {
                problem.kind = .corruptBlob
                if let path = problem.path { quarantineInto(&problem, path) }
            }
        case .quarantine:
            if let path = problem.path, FileSystem.exists(path) { quarantineInto(&problem, path) }
        case .removeStaging:
            guard let path = problem.path else { return }
            do {
                try FileSystem.remove(path)
                problem.repaired = true
                problem.detail += "; removed"
            } catch { problem.detail += "; could not be removed: \(VaultError.wrap(error))" }
        }
    }

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

    /// Fetches a blob back from the sync server (when one is set) and enters it through the ingest
    /// path, `rows` writing in the same transaction as its blob row; true when it came back. Trust
    /// nothing fetched: the store hashed it while staging, and it must be the blob asked for.
    func refetch(_ id: BlobID, _ options: FsckOptions, rows: (CatalogWriter, StagedBlob) throws -> Void) async throws -> Bool {
        guard let refetcher = options.refetcher,
              let staged = try? await refetcher.fetch(id, into: blobs) else { return false }
        guard staged.id == id else {
            blobs.discard(staged)
            return false
        }
        try ingestOnce([.staged(staged)]) { w, _ in try rows(w, staged) }
        return true
    }

    /// Records good blob files no row described and makes each an attachment of a new receipt in
    /// zone `recovered`. Returns the receipts' ids.
    func adoptIntoRecovered(_ files: [VerifiedBlob]) throws -> [ReceiptID] {
        try ingestOnce(files.sorted { $0.id < $1.id }.map { .adopted($0) }) { w, adopted in
            try w.ensureZone(Zone.recovered)
            return try adopted.map { try Self.insertRecoveredReceipt(w, $0.id, size: $0.size, mediaType: $0.mediaType) }
        }
    }

    static func insertRecoveredReceipt(_ w: CatalogWriter, _ id: BlobID, size: Int64, mediaType: String) throws -> ReceiptID {
        let receipt = ReceiptID.generate()
        try w.insertRecoveredReceipt(id: receipt, zone: Zone.recovered,
                                     note: "recovered by `receipt fsck --repair`: blob \(id.hex) was in the vault without a catalog record")
        _ = try w.insertAttachment(receiptID: receipt, blob: id, size: size, filename: "recovered-\(id.hex.prefix(12))" + fileExtension(mediaType),
                                   mediaType: mediaType, position: 0)
        return receipt
    }

    static func fileExtension(_ mediaType: String) -> String {
        MediaType.fileExtension(for: mediaType).map { "." + $0 } ?? ""
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
