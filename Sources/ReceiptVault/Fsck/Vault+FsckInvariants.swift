import BlobStore
import Foundation
import GRDB
import ReceiptCatalog

extension Vault {
    // MARK: - The invariants, on a readable catalog

    /// A blob row as fsck needs it.
    struct RowInfo {
        let id: BlobID
        let size: Int64
        let storedSize: Int64
        let encoding: BlobEncoding
        let inline: Bool
    }

    func checkInvariants(_ options: FsckOptions, sink: FsckSink) async throws {
        let repair = options.repair
        // Files before the catalog: an import installs before it commits, so a file listed here has
        // its row in the snapshot below or committed later (which the re-check at the end catches).
        let files = try blobs.enumerate()
        // Nothing here is held per row of the vault: inline blobs are checked by the pass below, the
        // receipts of a blob are looked up only for a blob with a problem, and a file is looked up in
        // the catalog as it is listed (a dictionary of every attachment and a set of every address took
        // ~200 MB at a million receipts).
        struct Snapshot {
            /// Blobs kept in files: these, and the files no row records, are verified below.
            var rows: [RowInfo] = []
            var unrecorded: [BlobFile] = []
            var badRows: [(String, String)] = []
            var dangling: [String: [String]] = [:]
            var foreignKeys: [(table: String, rowid: Int64?, parent: String)] = []
        }
        let snap = try catalog.read { db -> Snapshot in
            var s = Snapshot()
            let rows = try Row.fetchCursor(db, sql: "SELECT sha256, size, storedSize, encoding, inline IS NOT NULL FROM blobs")
            while let row = try rows.next() {
                let sha: String = row[0]
                let encodingText: String = row[3]
                guard let id = BlobID(hex: sha), let encoding = BlobEncoding(rawValue: encodingText) else {
                    s.badRows.append((sha, encodingText))
                    continue
                }
                let inline: Bool = row[4]
                if !inline { s.rows.append(RowInfo(id: id, size: row[1], storedSize: row[2], encoding: encoding, inline: false)) }
            }
            let recorded = try db.makeStatement(sql: "SELECT 1 FROM blobs WHERE sha256 = ?")
            for file in files {
                guard let id = file.id, try Bool.fetchOne(recorded, arguments: [id.hex]) == nil else { continue }
                s.unrecorded.append(file)
            }
            let dangling = try Row.fetchCursor(db, sql: """
                SELECT a.sha256, a.receiptID FROM attachments a
                WHERE NOT EXISTS (SELECT 1 FROM blobs b WHERE b.sha256 = a.sha256) ORDER BY a.sha256, a.receiptID
                """)
            while let row = try dangling.next() { s.dangling[row[0], default: []].append(row[1]) }
            for row in try Row.fetchAll(db, sql: "PRAGMA foreign_key_check") {
                let table: String = row[0]
                let parent: String = row[2]
                if table == "attachments" && parent == "blobs" { continue }  // reported as missing blobs
                s.foreignKeys.append((table, row[1], parent))
            }
            return s
        }
        /// The receipts that refer to a blob (asked only for a blob with a problem).
        let catalog = self.catalog
        @Sendable func receipts(_ id: String) -> [String] {
            (try? catalog.read { db in
                try String.fetchAll(db.cachedStatement(sql: "SELECT receiptID FROM attachments WHERE sha256 = ? ORDER BY position, receiptID"),
                                    arguments: [id])
            }) ?? []
        }

        for (sha, encoding) in snap.badRows {
            sink.emit(FsckProblem(.catalog, sha256: sha, receipts: receipts(sha),
                                  detail: "the catalog holds a blob row with address '\(sha)' and encoding '\(encoding)', which are not valid"))
        }
        try await checkForeignKeys(snap.foreignKeys, repair: repair, sink: sink)

        // Inline blobs: re-hashed from the catalog, one pass.
        var corruptInline: [(BlobID, String)] = []
        try catalog.read { db in
            let rows = try Row.fetchCursor(db, sql: "SELECT sha256, size, inline FROM blobs WHERE inline IS NOT NULL")
            while let row = try rows.next() {
                let sha: String = row[0]
                let size: Int64 = row[1]
                let bytes: [UInt8] = (row[2] as Data?).map { [UInt8]($0) } ?? []
                guard let id = BlobID(hex: sha) else { continue }
                let actual = SHA256Hasher.hash(bytes)
                sink.countInline(Int64(bytes.count))
                if actual != id || Int64(bytes.count) != size {
                    corruptInline.append((id, "its inline bytes (\(bytes.count), catalog says \(size)) hash to \(actual)"))
                }
            }
        }
        for (id, detail) in corruptInline {
            var problem = FsckProblem(.corruptBlob, sha256: id.hex, receipts: receipts(id.hex), path: catalog.path,
                                      detail: "inline blob \(id) is corrupt: \(detail)")
            if repair, let stored = await refetch(id, options) {
                try catalog.transaction { w in
                    try w.rerecordBlob(id, size: nil, storedSize: stored.storedSize, encoding: stored.encoding)
                }
                problem.repaired = true
                problem.detail += "; fetched back from the sync server"
            } else if repair {
                problem.detail += "; no sync server could give it back"
            }
            sink.emit(problem)
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
        // Without --repair, a row's problem is reported the moment its file is verified; with it,
        // once its repair was tried.
        let outcomes = await Self.verifyAll(items, store: blobs, quick: options.quick, workers: options.workers, sink: sink) { item, outcome in
            guard !repair, item.recorded != nil, Self.rowProblem(item, outcome, refs: []) != nil,
                  let problem = Self.rowProblem(item, outcome, refs: receipts(item.id.hex)) else { return }
            sink.emit(problem)
        }

        var orphans: [(VerifyItem, VerifyOutcome)] = []
        for (item, outcome) in zip(items, outcomes) {
            if item.recorded == nil {
                orphans.append((item, outcome))
                continue
            }
            guard repair, Self.rowProblem(item, outcome, refs: []) != nil else { continue }
            let refs = receipts(item.id.hex)
            guard repair, var problem = Self.rowProblem(item, outcome, refs: refs) else { continue }
            switch outcome {
            case .good, .unhashed:
                continue
            case .misrecorded(let encoding, let size, let storedSize, _):
                try catalog.transaction { w in
                    try w.rerecordBlob(item.id, size: size, storedSize: storedSize, encoding: encoding)
                }
                problem.repaired = true
                problem.detail += "; the catalog now records the file as it is"
            case .missing where refs.isEmpty:
                if !FileSystem.exists(item.path) {
                    try catalog.transaction { w in try w.deleteBlobIfUnreferenced(item.id) }
                    problem.repaired = true
                    problem.detail += "; its row was removed"
                }
            case .missing, .corrupt:
                try await refetchInto(&problem, item.id, options, movingAside: item.path)
            }
            sink.emit(problem)
        }

        // Attachments whose blob row is absent.
        for (sha, refs) in snap.dangling.sorted(by: { $0.key < $1.key }) {
            guard let id = BlobID(hex: sha) else { continue }
            var problem = FsckProblem(.missingBlob, sha256: sha, receipts: refs, path: blobs.path(for: id),
                                      detail: "blob \(sha) of \(refs.count) receipt(s) has no row in the catalog")
            if repair {
                if (try? blobs.detectEncoding(id)) != nil, (try? blobs.storedSize(of: id)) != nil {
                    try ingestOnce([.adopted(id)]) { _, _ in }
                    problem.repaired = true
                    problem.detail += "; its file is good and is recorded again"
                } else if let stored = await refetch(id, options) {
                    try catalog.transaction { w in
                        try w.insertBlob(NewBlob(external: id, size: stored.size, storedSize: stored.storedSize,
                                                 encoding: stored.encoding))
                    }
                    problem.repaired = true
                    problem.detail += "; fetched back from the sync server"
                } else {
                    problem.detail += "; no file and no sync server could give it back (the receipt is kept)"
                }
            }
            sink.emit(problem)
        }

        // Files no row records: confirm (an import running meanwhile may have committed), then report.
        let stillOrphans: Set<BlobID> = repair ? Set(orphans.map(\.0.id)) : try catalog.read { db in
            var out = Set<BlobID>()
            for (item, _) in orphans where try !BlobRecord.exists(db, key: item.id.hex) { out.insert(item.id) }
            return out
        }
        for (item, outcome) in orphans where stillOrphans.contains(item.id) && FileSystem.exists(item.path) {
            if snap.dangling[item.id.hex] != nil { continue }  // handled above with its receipts
            switch outcome {
            case .corrupt(let detail), .missing(let detail):
                var problem = FsckProblem(.corruptBlob, sha256: item.id.hex, path: item.path,
                                          detail: "blob file \(item.path), which no row records, is corrupt: \(detail)")
                if repair { quarantineInto(&problem, item.path) }
                sink.emit(problem)
            case .good, .unhashed, .misrecorded:
                var problem = FsckProblem(.orphanBlob, sha256: item.id.hex, path: item.path,
                                          detail: "blob file \(item.path) is recorded by no catalog row (left by an interrupted import)")
                if repair {
                    if (try? blobs.detectEncoding(item.id)) != nil {
                        let receipt = try adoptIntoRecovered([item.id])
                        problem.receipts = receipt
                        problem.receipt = receipt.first
                        problem.repaired = true
                        problem.detail += "; kept as an attachment of receipt \(receipt.first ?? "?") in zone '\(Zone.recovered)'"
                    } else {
                        problem.kind = .corruptBlob
                        quarantineInto(&problem, item.path)
                    }
                }
                sink.emit(problem)
            }
        }

        // Stray files under blobs/.
        for file in files where file.id == nil && FileSystem.exists(file.path) {
            var problem = FsckProblem(.unknownFile, path: file.path,
                                      detail: "\(file.path) is not a blob file (its name, place or type is not a blob's)")
            if repair { quarantineInto(&problem, file.path, repairedByMove: true) }
            sink.emit(problem)
        }
        try Self.reportInterim(blobs, repair: repair, sink: sink)
    }

    /// The problem a verified row shows, before any repair; nil when it is fine.
    static func rowProblem(_ item: VerifyItem, _ outcome: VerifyOutcome, refs: [String]) -> FsckProblem? {
        switch outcome {
        case .good, .unhashed:
            return nil
        case .misrecorded(_, _, _, let detail):
            return FsckProblem(.catalog, sha256: item.id.hex, receipts: refs, path: item.path, detail: "blob \(item.id): \(detail)")
        case .missing(let detail) where refs.isEmpty:
            // A row for bytes that are gone, that nothing refers to: dropping it loses nothing.
            return FsckProblem(.orphanBlob, sha256: item.id.hex, path: item.path,
                               detail: "the catalog records blob \(item.id), which no receipt refers to and whose file is gone (\(detail))")
        case .missing(let detail):
            return FsckProblem(.missingBlob, sha256: item.id.hex, receipts: refs, path: item.path,
                               detail: "blob \(item.id) of \(refs.count) receipt(s) is missing: \(detail)")
        case .corrupt(let detail):
            return FsckProblem(.corruptBlob, sha256: item.id.hex, receipts: refs, path: item.path,
                               detail: "blob \(item.id) is corrupt: \(detail)")
        }
    }

    /// Foreign keys other than attachment → blob (which are missing blobs).
    func checkForeignKeys(_ rows: [(table: String, rowid: Int64?, parent: String)], repair: Bool, sink: FsckSink) async throws {
        guard !rows.isEmpty else { return }
        // Receipts in a zone the catalog lost: recreate the zone. Attachments of a receipt the catalog
        // lost: recreate the receipt in zone `recovered`. Nothing is deleted.
        let missingZones = try catalog.read { db in
            try String.fetchAll(db, sql: "SELECT DISTINCT zone FROM receipts WHERE zone NOT IN (SELECT name FROM zones)")
        }
        let missingReceipts = try catalog.read { db in
            try String.fetchAll(db, sql: "SELECT DISTINCT receiptID FROM attachments WHERE receiptID NOT IN (SELECT id FROM receipts)")
        }
        for zone in missingZones {
            var problem = FsckProblem(.catalog, detail: "receipts of zone '\(zone)' refer to a zone the catalog does not have")
            if repair {
                try catalog.write { db in try Zone(name: zone, createdAt: nowMillis()).insert(db, onConflict: .ignore) }
                problem.repaired = true
                problem.detail += "; the zone was recreated"
            }
            sink.emit(problem)
        }
        for receipt in missingReceipts {
            var problem = FsckProblem(.catalog, receipts: [receipt],
                                      detail: "attachments refer to receipt \(receipt), which the catalog does not have")
            if repair && receipt.count == 36 {
                try catalog.write { db in
                    try ensureRecoveredZone(db)
                    let now = nowMillis()
                    try Receipt(id: receipt, zone: Zone.recovered, note: Self.recoveredNote, createdAt: now, modifiedAt: now)
                        .insert(db, onConflict: .ignore)
                    try recordChange(db, receipt, zone: Zone.recovered, .upsert)
                }
                problem.repaired = true
                problem.detail += "; the receipt was recreated in zone '\(Zone.recovered)'"
            }
            sink.emit(problem)
        }
        let other = rows.filter { !($0.table == "receipts" && $0.parent == "zones") && !($0.table == "attachments" && $0.parent == "receipts") }
        for row in other {
            sink.emit(FsckProblem(.catalog, detail: "row \(row.rowid.map(String.init) ?? "?") of \(row.table) refers to a missing row of \(row.parent)"))
        }
    }
}
