import BlobStore
import Foundation
import GRDB
import MediaTypes
import ReceiptCatalog

extension Vault {
    /// Sets the unreadable catalog aside in `quarantine/` and builds a new one in which every receipt
    /// that could be salvaged is kept and every good blob file of the vault is recorded (those no
    /// salvaged receipt refers to become attachments of receipts in zone `recovered`). Corrupt blob
    /// files go to `quarantine/`. Returns a one-sentence summary. Runs under the exclusive vault lock.
    static func rebuildCatalog(vaultPath: String, store: BlobStore, options: FsckOptions, sink: FsckSink) async throws -> String {
        do {
            return try await rebuild(vaultPath: vaultPath, store: store, options: options, sink: sink)
        } catch let error as VaultError {
            throw error
        } catch {
            throw VaultError(.io, "rebuilding the catalog failed, nothing was replaced: \(VaultError.wrap(error))")
        }
    }

    private static func rebuild(vaultPath: String, store: BlobStore, options: FsckOptions, sink: FsckSink) async throws -> String {
        let catalogPath = FileSystem.join(vaultPath, Catalog.fileName)
        try FileSystem.makeDirectories(store.interimPath, mode: 0o700)
        let salvaged = Catalog.salvage(catalogPath, scratch: store.interimPath)

        // Every blob file, verified two at a time; corrupt ones are set aside.
        let files = try store.enumerate()
        let items = files.compactMap { f in f.id.map { VerifyItem(id: $0, path: f.path, recorded: nil, size: f.storedSize, storedSize: f.storedSize) } }
        let outcomes = await verifyAll(items, store: store, quick: false, workers: options.workers, sink: sink)
        var good: [BlobID: VerifiedBlob] = [:]
        var receiptsOf: [String: [String]] = [:]
        for row in salvaged.rows("attachments") {
            if let sha = row.blobID("sha256")?.hex, let receipt = ReceiptID.fromDatabaseValue(row["receiptID"] as DatabaseValue)?.text { receiptsOf[sha, default: []].append(receipt) }
        }
        for (item, outcome) in zip(items, outcomes) {
            switch outcome {
            case .good(let blob), .misrecorded(let blob, _):
                good[item.id] = blob
            case .unhashed:
                break
            case .corrupt(let detail), .missing(let detail):
                var problem = FsckProblem(.corruptBlob, sha256: item.id.hex, receipts: receiptsOf[item.id.hex] ?? [],
                                          path: item.path, detail: "blob \(item.id) is corrupt: \(detail)")
                do {
                    let target = try store.quarantine(item.path)
                    problem.detail += "; moved to \(target)"
                    problem.repaired = problem.receipts.isEmpty
                } catch {
                    problem.detail += "; could not be moved to quarantine: \(VaultError.wrap(error))"
                }
                sink.emit(problem)
            }
        }

        // The new catalog, built under a staging name.
        var settingsMap: [String: String] = [:]
        for row in salvaged.rows("settings") {
            if let key = row["key"] as String?, let value = row["value"] as String? { settingsMap[key] = value }
        }
        let settings = VaultSettings(
            vaultID: settingsMap["vaultID"].flatMap { $0.isEmpty ? nil : $0 } ?? UUID().uuidString.lowercased(),
            inlineThreshold: settingsMap["inlineThreshold"].flatMap { Int64($0) } ?? VaultSettings.defaultInlineThreshold,
            compression: settingsMap["compression"].flatMap { CompressionMode(rawValue: $0) } ?? .auto)
        let scratch = FileSystem.join(store.interimPath, "catalog-rebuild-" + SecureRandom.hex(8) + ".interim")
        let fresh = try Catalog.create(at: scratch, settings: settings)
        // The files found good may be ones a killed writer installed without its flushes.
        let durable = try store.makeDurable(good.values.sorted { $0.id < $1.id })
        var counts = (receipts: 0, attachments: 0, inline: 0, recovered: 0)
        var missing: [(String, [String])] = []
        // Inline blobs kept (their bytes live only in the catalog): size and media type by address.
        var inline: [BlobID: (size: Int64, mediaType: String)] = [:]
        // Addresses of salvaged attachments that could not be kept (their receipt is gone) although
        // their blob is here: never taken for garbage, and the media type they gave.
        var unattached: [String: String] = [:]
        do {
            try fresh.transaction { w in
                for row in salvaged.rows("settings") { _ = try? w.copy(row, into: "settings", replace: true) }
                for row in salvaged.rows("zones") { _ = try? w.copy(row, into: "zones") }
                // Blob rows: inline ones whose bytes still hash to their address; external ones whose
                // file verified above (recorded as the file is).
                for row in salvaged.rows("blobs") {
                    guard let id = row.blobID("sha256") else { continue }
                    if let data = row["inline"] as Data? {
                        let blob = DurableBlob(inline: [UInt8](data))
                        if blob.id == id {
                            try w.insertBlob(blob, createdAt: row["createdAt"] as Int64?)
                            counts.inline += 1
                            inline[id] = (blob.size, data.withUnsafeBytes { MediaType.of(head: $0, filename: "") })
                        }
                    }
                }
                for blob in durable { try w.insertBlob(blob) }
                for row in salvaged.rows("receipts") {
                    if let zone = row["zone"] as String? { try w.ensureZone(zone) }
                    if (try? w.copy(row, into: "receipts")) == true { counts.receipts += 1 }
                }
                for row in salvaged.rows("attachments") {
                    let stored = row["sha256"] as DatabaseValue
                    let sha = stored.isNull ? nil : Catalog.shownAddress(stored)
                    if (try? w.copyAttachment(row)) == true {
                        counts.attachments += 1
                    } else if let sha, let receipt = ReceiptID.fromDatabaseValue(row["receiptID"] as DatabaseValue)?.text,
                              try !(BlobID.fromDatabaseValue(stored).map(w.hasBlobRow) ?? false) {
                        if let i = missing.firstIndex(where: { $0.0 == sha }) { missing[i].1.append(receipt) } else { missing.append((sha, [receipt])) }
                    } else if let sha {
                        unattached[sha] = (row["mediaType"] as String?) ?? unattached[sha] ?? "application/octet-stream"
                    }
                }
                // Sizes from the blob rows: an older catalog had none, a damaged one may hold wrong ones.
                try w.resizeAttachments()
                for row in salvaged.rows("changes") {
                    guard let receipt = ReceiptID.fromDatabaseValue(row["receiptID"] as DatabaseValue), let zone = row["zone"] as String?,
                          let kind = (row["kind"] as String?).flatMap(Change.Kind.init(rawValue:)) else { continue }
                    try w.restoreChange(receipt, zone: zone, kind, at: row["at"] as Int64?)
                }
                for row in salvaged.rows("syncState") { _ = try? w.copy(row, into: "syncState") }
                // Every receipt is pushed again where a server is set.
                try w.requeueAll()
            }
            // Blob files no salvaged attachment refers to. When the old attachments were read to the
            // end, a row they did not refer to was garbage before (kept for gc as it was); otherwise
            // nobody can tell, and the blob becomes a receipt of zone `recovered`.
            let attachmentsComplete = salvaged.incomplete.isDisjoint(with: ["attachments", "blobs"]) && !salvaged.tables.isEmpty
            let salvagedRows = Set(salvaged.rows("blobs").compactMap { $0.blobID("sha256")?.hex })
            let referenced = try fresh.referencedBlobs()
            var adopt: [(BlobID, Int64, String)] = []
            for (id, file) in good.sorted(by: { $0.key < $1.key }) where !referenced.contains(id) {
                if attachmentsComplete && salvagedRows.contains(id.hex) && unattached[id.hex] == nil { continue }
                adopt.append((id, file.size, try sniffMediaType(store, id, file.encoding)))
            }
            // Inline blobs likewise: gc would otherwise take a row whose bytes are nowhere else.
            for (id, kept) in inline.sorted(by: { $0.key < $1.key }) where !referenced.contains(id) {
                if attachmentsComplete && unattached[id.hex] == nil { continue }
                adopt.append((id, kept.size, unattached[id.hex] ?? kept.mediaType))
            }
            try fresh.transaction { w in
                if !adopt.isEmpty { try w.ensureZone(Zone.recovered) }
                for (id, size, mediaType) in adopt {
                    _ = try insertRecoveredReceipt(w, id, size: size, mediaType: mediaType)
                    counts.recovered += 1
                }
            }
            try fresh.close()
        } catch {
            try? fresh.close()
            for suffix in ["", "-wal", "-shm"] { try? FileSystem.remove(scratch + suffix) }
            throw error
        }
        // Attachments whose bytes are nowhere: fetched back where a server is set, else reported (the
        // receipt itself is kept).
        for (sha, receipts) in missing {
            sink.emit(FsckProblem(.missingBlob, sha256: sha, receipts: receipts, path: nil,
                                  detail: "blob \(sha) of \(receipts.count) receipt(s) is neither in the vault nor in what could be read of the old catalog; "
                                    + "its attachment could not be kept (the receipt is)"))
        }

        // Everything into the main file, so the WAL can go (it must never meet the vault's catalog name).
        do {
            try Catalog.checkpoint(scratch)
            if let st = try FileSystem.status(scratch + "-wal"), st.size > 0 {
                throw VaultError(.io, "the new catalog \(scratch) still has a write-ahead log after a checkpoint; nothing was replaced")
            }
            for suffix in ["-wal", "-shm"] { try FileSystem.remove(scratch + suffix) }
            try FileDescriptor.with(scratch, O_RDONLY) { try $0.sync() }
        } catch {
            for suffix in ["", "-wal", "-shm"] { try? FileSystem.remove(scratch + suffix) }
            throw error
        }
        // Swap: the old catalog (and its WAL) into quarantine/, then the new one renamed in.
        let stamp = isoStamp()
        let aside = FileSystem.join(store.quarantinePath, "catalog-" + stamp + "-" + SecureRandom.hex(4))
        try FileSystem.makeDirectories(aside, mode: 0o700)
        var setAside = false
        if FileSystem.exists(catalogPath) {
            do {
                try FileSystem.link(catalogPath, FileSystem.join(aside, Catalog.fileName))
            } catch is PathError {
                try FileSystem.rename(catalogPath, FileSystem.join(aside, Catalog.fileName))
            }
            setAside = true
        }
        for suffix in ["-wal", "-shm", "-journal"] where FileSystem.exists(catalogPath + suffix) {
            try FileSystem.rename(catalogPath + suffix, FileSystem.join(aside, Catalog.fileName + suffix))
        }
        try FileSystem.syncDirectory(aside)
        try FileSystem.syncDirectory(store.quarantinePath)
        try FileSystem.rename(scratch, catalogPath)
        try FileSystem.syncDirectory(vaultPath)
        try FileSystem.syncDirectory(store.interimPath)

        var summary = setAside ? "the old catalog was set aside in \(aside)" : "no old catalog was found"
        summary += " and a new one built: \(counts.receipts) receipt(s), \(counts.attachments) attachment(s) and "
            + "\(counts.inline) inline blob(s) salvaged, \(counts.recovered) blob file(s) kept as receipts of zone '\(Zone.recovered)'"
        if !salvaged.notes.isEmpty { summary += " (" + salvaged.notes.joined(separator: "; ") + ")" }
        return summary
    }

    static func isoStamp() -> String {
        var t = time(nil)
        var parts = tm()
        gmtime_r(&t, &parts)
        return String(format: "%04d%02d%02dT%02d%02d%02dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                      Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }
}
