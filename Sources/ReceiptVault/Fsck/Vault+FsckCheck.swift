import BlobStore
import Foundation
import ReceiptCatalog

/// The checker's invariants (docs/DESIGN.md, "fsck"). Every function here reads and reports;
/// nothing here changes a file or a row (`Vault+FsckRepair.swift` does, from what is reported).
extension Vault {
    /// The invariants on a readable catalog.
    func checkInvariants(_ options: FsckOptions, sink: FsckSink) async throws {
        // Files before the catalog: an import installs before it commits, so a file listed here has
        // its row in the snapshot below or committed later (which the re-check at the end catches).
        let files = try blobs.enumerate()
        let snap = try catalog.checkSnapshot(files: files)
        let catalog = self.catalog
        @Sendable func receipts(_ id: BlobID) -> [String] { catalog.receipts(of: id) }

        for (stored, encoding) in snap.badRows {
            let sha = Catalog.shownAddress(stored)
            sink.emit(FsckProblem(.catalog, sha256: sha, receipts: catalog.receipts(ofDamagedAddress: stored),
                                  detail: "the catalog holds a blob row with address '\(sha)' and encoding '\(encoding)', which are not valid"))
        }
        for (row, id) in snap.malformedReceiptIDs {
            sink.emit(FsckProblem(.catalog, detail: "receipt row \(row) has the id '\(id.prefix(64))', which is no receipt id (a UUID)"))
        }
        checkForeignKeys(snap, sink: sink)

        // Inline blobs: re-hashed from the catalog, one pass (--quick re-hashes nothing: they are
        // present by being rows, and only counted).
        var corruptInline: [(BlobID, String)] = []
        if options.quick {
            sink.countInline(blobs: snap.inlineBlobs, bytes: snap.inlineBytes)
        } else { try catalog.forEachInlineBlob { id, size, bytes in
            let actual = SHA256Hasher.hash(bytes)
            sink.countInline(blobs: 1, bytes: Int64(bytes.count))
            if actual != id || Int64(bytes.count) != size {
                corruptInline.append((id, "its inline bytes (\(bytes.count), catalog says \(size)) hash to \(actual)"))
            }
        } }
        for (id, detail) in corruptInline {
            sink.emit(FsckProblem(.corruptBlob, sha256: id.hex, receipts: receipts(id), path: catalog.path,
                                  detail: "inline blob \(id) is corrupt: \(detail)", fix: .refetch(id, inline: true)))
        }

        // External blobs and files no row records, verified two (or `workers`) at a time.
        var items: [VerifyItem] = []
        for row in snap.rows {
            items.append(VerifyItem(id: row.id, path: blobs.path(for: row.id), recorded: row.encoding,
                                    size: row.size, storedSize: row.storedSize))
        }
        for file in snap.unrecorded {
            guard let id = file.id else { continue }
            items.append(VerifyItem(id: id, path: file.path, recorded: nil, size: file.storedSize, storedSize: file.storedSize))
        }
        items.sort { $0.storedSize > $1.storedSize }  // largest first: the workers finish together
        // A row's problem is reported the moment its file is verified (its receipts asked then).
        let outcomes = await Self.verifyAll(items, store: blobs, quick: options.quick, workers: options.workers, sink: sink) { item, outcome in
            guard item.recorded != nil, Self.rowProblem(item, outcome, refs: []) != nil,
                  let problem = Self.rowProblem(item, outcome, refs: receipts(item.id)) else { return }
            sink.emit(problem)
        }

        // Attachments whose blob row is absent.
        for (sha, refs) in snap.dangling.sorted(by: { $0.key < $1.key }) {
            guard let id = BlobID(hex: sha) else { continue }
            sink.emit(FsckProblem(.missingBlob, sha256: sha, receipts: refs, path: blobs.path(for: id),
                                  detail: "blob \(sha) of \(refs.count) receipt(s) has no row in the catalog", fix: .restoreRow(id)))
        }

        // Files no row records: confirm (an import running meanwhile may have committed), then report.
        let orphans = zip(items, outcomes).filter { $0.0.recorded == nil }
        let stillOrphans = try catalog.unrecorded(orphans.map(\.0.id))
        for (item, outcome) in orphans where stillOrphans.contains(item.id) && FileSystem.exists(item.path) {
            if snap.dangling[item.id.hex] != nil { continue }  // reported above with its receipts
            switch outcome {
            case .corrupt(let detail), .missing(let detail):
                sink.emit(FsckProblem(.corruptBlob, sha256: item.id.hex, path: item.path,
                                      detail: "blob file \(item.path), which no row records, is corrupt: \(detail)", fix: .quarantine))
            case .good, .unhashed, .misrecorded:
                sink.emit(FsckProblem(.orphanBlob, sha256: item.id.hex, path: item.path,
                                      detail: "blob file \(item.path) is recorded by no catalog row (left by an interrupted import)",
                                      fix: .adoptOrphan(item.id)))
            }
        }

        // Stray files under blobs/.
        for file in files where file.id == nil && FileSystem.exists(file.path) {
            sink.emit(FsckProblem(.unknownFile, path: file.path,
                                  detail: "\(file.path) is not a blob file (its name, place or type is not a blob's)", fix: .quarantine))
        }
        try Self.reportInterim(blobs, sink: sink)
    }

    /// The problem a verified row shows; nil when it is fine.
    static func rowProblem(_ item: VerifyItem, _ outcome: VerifyOutcome, refs: [String]) -> FsckProblem? {
        switch outcome {
        case .good, .unhashed:
            return nil
        case .misrecorded(let blob, let detail):
            return FsckProblem(.catalog, sha256: item.id.hex, receipts: refs, path: item.path, detail: "blob \(item.id): \(detail)",
                               fix: .rerecord(item.id, encoding: blob.encoding, size: blob.size, storedSize: blob.storedSize))
        case .missing(let detail) where refs.isEmpty:
            // A row for bytes that are gone, that nothing refers to: dropping it loses nothing.
            return FsckProblem(.orphanBlob, sha256: item.id.hex, path: item.path,
                               detail: "the catalog records blob \(item.id), which no receipt refers to and whose file is gone (\(detail))",
                               fix: .dropRow(item.id))
        case .missing(let detail):
            return FsckProblem(.missingBlob, sha256: item.id.hex, receipts: refs, path: item.path,
                               detail: "blob \(item.id) of \(refs.count) receipt(s) is missing: \(detail)", fix: .refetch(item.id, inline: false))
        case .corrupt(let detail):
            return FsckProblem(.corruptBlob, sha256: item.id.hex, receipts: refs, path: item.path,
                               detail: "blob \(item.id) is corrupt: \(detail)", fix: .refetch(item.id, inline: false))
        }
    }

    /// Foreign keys other than attachment → blob (which are missing blobs). Receipts in a zone the
    /// catalog lost get the zone back; attachments of a lost receipt get it back in zone `recovered`.
    func checkForeignKeys(_ snap: CatalogCheckSnapshot, sink: FsckSink) {
        guard !snap.foreignKeys.isEmpty else { return }
        for zone in snap.missingZones {
            sink.emit(FsckProblem(.catalog, detail: "receipts of zone '\(zone)' refer to a zone the catalog does not have",
                                  fix: .recreateZone(zone)))
        }
        for receipt in snap.missingReceipts {
            sink.emit(FsckProblem(.catalog, receipts: [receipt],
                                  detail: "attachments refer to receipt \(receipt), which the catalog does not have",
                                  fix: ReceiptID(receipt).map(FsckFix.recreateReceipt)))
        }
        let other = snap.foreignKeys.filter {
            !($0.table == "receipts" && $0.parent == "zones") && !($0.table == "attachments" && $0.parent == "receipts")
        }
        for row in other {
            sink.emit(FsckProblem(.catalog, detail: "row \(row.rowid.map(String.init) ?? "?") of \(row.table) refers to a missing row of \(row.parent)"))
        }
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
                sink.emit(FsckProblem(.corruptBlob, sha256: item.id.hex, path: item.path, detail: "blob \(item.id) \(detail)", fix: .quarantine))
            default: break
            }
        }
        for file in files where file.id == nil {
            sink.emit(FsckProblem(.unknownFile, path: file.path, detail: "\(file.path) is not a blob file (its name or place is not a blob's)",
                                  fix: .quarantine))
        }
        try reportInterim(store, sink: sink)
    }

    /// Staging files no running command owns (stale) and anything under interim/ that is not a file.
    static func reportInterim(_ store: BlobStore, sink: FsckSink) throws {
        let first: [InterimFile]
        do { first = try store.interimFiles() } catch { throw VaultError.wrap(error) }
        let suspects = first.filter { !$0.owned }
        guard !suspects.isEmpty else { return }
        // A staging file is locked right after it is created: look again before calling it stale.
        let again = Dictionary((try? store.interimFiles())?.map { ($0.path, $0) } ?? [], uniquingKeysWith: { a, _ in a })
        for file in suspects {
            guard let now = again[file.path], !now.owned, let st = try? FileSystem.status(file.path) else { continue }
            if !st.isRegular {
                sink.emit(FsckProblem(.unknownFile, path: file.path, detail: "\(file.path) is not a staging file", fix: .quarantine))
                continue
            }
            sink.emit(FsckProblem(.staleInterim, path: file.path,
                                  detail: "staging file \(file.path) (\(st.size) bytes) is owned by no running command", fix: .removeStaging))
        }
    }
}
