import BlobStore
import Foundation
import GRDB
import ReceiptCatalog

/// Rows read back from a damaged catalog, table by table, as far as SQLite could read them.
struct SalvagedCatalog {
    var tables: [String: [Row]] = [:]
    /// Tables that could not be read to their end.
    var incomplete: Set<String> = []
    var notes: [String] = []

    func rows(_ table: String) -> [Row] { tables[table] ?? [] }
}

extension Vault {
    /// Tables copied from a damaged catalog, parents before children. `importCache` is left out: it
    /// only saves re-hashing, and a stale entry is worse than none.
    static let salvageOrder = ["settings", "zones", "blobs", "receipts", "attachments", "changes", "syncState"]

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
        let salvaged = salvage(catalogPath, store: store)

        // Every blob file, verified two at a time; corrupt ones are set aside.
        let files = try store.enumerate()
        let items = files.compactMap { f in f.id.map { VerifyItem(id: $0, path: f.path, recorded: nil, size: f.storedSize, storedSize: f.storedSize) } }
        let outcomes = await verifyAll(items, store: store, quick: false, workers: options.workers, sink: sink)
        var good: [BlobID: (encoding: BlobEncoding, size: Int64, stored: Int64)] = [:]
        var receiptsOf: [String: [String]] = [:]
        for row in salvaged.rows("attachments") {
            if let sha = row["sha256"] as String?, let receipt = row["receiptID"] as String? { receiptsOf[sha, default: []].append(receipt) }
        }
        for (item, outcome) in zip(items, outcomes) {
            switch outcome {
            case .good(let encoding, let size, let stored, _), .misrecorded(let encoding, let size, let stored, _):
                good[item.id] = (encoding, size, stored)
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
        var counts = (receipts: 0, attachments: 0, inline: 0, recovered: 0)
        var missing: [(String, [String])] = []
        do {
            try fresh.transaction { w in
                let (db, now) = (w.db, w.now)
                for row in salvaged.rows("settings") { _ = try? copy(row, into: "settings", db, replace: true) }
                for row in salvaged.rows("zones") { _ = try? copy(row, into: "zones", db) }
                // Blob rows: inline ones whose bytes still hash to their address; external ones whose
                // file verified above (recorded as the file is).
                for row in salvaged.rows("blobs") {
                    guard let sha = row["sha256"] as String?, let id = BlobID(hex: sha) else { continue }
                    if let data = row["inline"] as Data? {
                        let bytes = [UInt8](data)
                        if SHA256Hasher.hash(bytes) == id {
                            try w.insertBlob(NewBlob(inline: bytes, id: id), createdAt: row["createdAt"] as Int64?)
                            counts.inline += 1
                        }
                    }
                }
                for (id, file) in good {
                    try w.insertBlob(NewBlob(external: id, size: file.size, storedSize: file.stored, encoding: file.encoding))
                }
                for row in salvaged.rows("receipts") {
                    if let zone = row["zone"] as String? {
                        try Zone(name: zone, createdAt: now).insert(db, onConflict: .ignore)
                    }
                    if (try? copy(row, into: "receipts", db)) == true { counts.receipts += 1 }
                }
                for row in salvaged.rows("attachments") {
                    if (try? copy(row, into: "attachments", db)) == true {
                        counts.attachments += 1
                    } else if let sha = row["sha256"] as String?, let receipt = row["receiptID"] as String?,
                              try BlobRecord.exists(db, key: sha) == false {
                        if let i = missing.firstIndex(where: { $0.0 == sha }) { missing[i].1.append(receipt) } else { missing.append((sha, [receipt])) }
                    }
                }
                for row in salvaged.rows("changes") {
                    guard let receipt = row["receiptID"] as String?, let zone = row["zone"] as String?,
                          let kind = (row["kind"] as String?).flatMap(Change.Kind.init(rawValue:)) else { continue }
                    try w.recordChange(receipt, zone: zone, kind, at: row["at"] as Int64?)
                }
                for row in salvaged.rows("syncState") { _ = try? copy(row, into: "syncState", db) }
                // Every receipt is pushed again where a server is set.
                try w.requeueAll()
            }
            // Blob files no salvaged attachment refers to. When the old attachments were read to the
            // end, a row they did not refer to was garbage before (kept for gc as it was); otherwise
            // nobody can tell, and the blob becomes a receipt of zone `recovered`.
            let attachmentsComplete = salvaged.incomplete.isDisjoint(with: ["attachments", "blobs"]) && !salvaged.tables.isEmpty
            let salvagedRows = Set(salvaged.rows("blobs").compactMap { $0["sha256"] as String? })
            let referenced = Set(try fresh.read { db in try String.fetchAll(db, sql: "SELECT DISTINCT sha256 FROM attachments") })
            var adopt: [(BlobID, String)] = []
            for (id, file) in good.sorted(by: { $0.key < $1.key }) where !referenced.contains(id.hex) {
                if attachmentsComplete && salvagedRows.contains(id.hex) { continue }
                adopt.append((id, try sniffMediaType(store, id, file.encoding)))
            }
            try fresh.transaction { w in
                if !adopt.isEmpty { try Zone(name: Zone.recovered, createdAt: w.now).insert(w.db, onConflict: .ignore) }
                for (id, mediaType) in adopt {
                    _ = try insertRecoveredReceipt(w, id, mediaType: mediaType)
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
            try checkpoint(scratch)
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
            if link(catalogPath, FileSystem.join(aside, Catalog.fileName)) != 0 {
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

    /// Inserts a salvaged row into the same table of the new catalog, by the columns both have.
    /// Returns false when the row was ignored (already present).
    static func copy(_ row: Row, into table: String, _ db: Database, replace: Bool = false) throws -> Bool {
        let columns = Set(try db.columns(in: table).map(\.name))
        let names = row.columnNames.filter { columns.contains($0) }
        guard !names.isEmpty else { return false }
        let values = names.map { row[$0] as DatabaseValue }
        let quoted = names.map { "\"\($0)\"" }.joined(separator: ", ")
        try db.execute(sql: "INSERT OR \(replace ? "REPLACE" : "IGNORE") INTO \"\(table)\" (\(quoted)) VALUES (\(databaseQuestionMarks(count: names.count)))",
                       arguments: StatementArguments(values))
        return db.changesCount > 0
    }

    /// Reads what SQLite can of a damaged catalog, from a copy (the original goes to quarantine
    /// untouched). Tables with a rowid are read past damaged pages by seeking beyond them.
    static func salvage(_ catalogPath: String, store: BlobStore) -> SalvagedCatalog {
        var result = SalvagedCatalog()
        guard FileSystem.exists(catalogPath) else { return result }
        let copyPath = FileSystem.join(store.interimPath, "catalog-salvage-" + SecureRandom.hex(8) + ".interim")
        defer { for suffix in ["", "-wal", "-shm", "-journal"] { try? FileSystem.remove(copyPath + suffix) } }
        do {
            try FileManager.default.copyItem(atPath: catalogPath, toPath: copyPath)
            if FileSystem.exists(catalogPath + "-wal") {
                try FileManager.default.copyItem(atPath: catalogPath + "-wal", toPath: copyPath + "-wal")
            }
        } catch {
            result.notes.append("the old catalog could not be copied to salvage it: \(error.localizedDescription)")
            return result
        }
        var config = Configuration()
        config.foreignKeysEnabled = false
        func openCopy() -> DatabaseQueue? {
            guard let queue = try? DatabaseQueue(path: copyPath, configuration: config) else { return nil }
            if (try? queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") }) != nil { return queue }
            try? queue.close()
            return nil
        }
        var opened = openCopy()
        var tables = salvageOrder
        if opened == nil {
            // The first page (header and schema) is unreadable. The catalog was built by the same
            // migrations as a fresh one, which puts every table's root on the same page: a fresh first
            // page lets SQLite read the rest (every row read is checked again before it is kept).
            if transplantFirstPage(into: copyPath, store: store) {
                opened = openCopy()
                if opened != nil { result.notes.append("its first page was unreadable and was replaced by a fresh one to read the rest") }
                // Only the first migration's tables are sure to have their roots where a fresh
                // catalog has them (a later table's root depends on when the migration ran); the
                // outbox is written again anyway.
                tables = ["settings", "zones", "blobs", "receipts", "attachments"]
            }
        }
        guard let queue = opened else {
            result.notes.append("SQLite cannot open the old catalog, nothing could be salvaged from it")
            return result
        }
        defer { try? queue.close() }
        for table in tables {
            do {
                try queue.inDatabase { db in
                    guard try db.tableExists(table) else { return }
                    let withoutRowid = try Bool.fetchOne(db, sql: "SELECT sql LIKE '%WITHOUT ROWID%' FROM sqlite_master WHERE name = ?",
                                                         arguments: [table]) ?? false
                    let (rows, complete) = readRows(db, table, rowid: !withoutRowid)
                    result.tables[table] = rows
                    if !complete {
                        result.incomplete.insert(table)
                        result.notes.append("\(table): \(rows.count) row(s) read, some could not be")
                    }
                }
            } catch {
                result.incomplete.insert(table)
                result.notes.append("\(table) could not be read")
            }
        }
        return result
    }

    /// Overwrites the first page of the file at `path` with the first page of a fresh catalog of
    /// the same page size, marking the page count as unknown so SQLite takes it from the file size.
    static func transplantFirstPage(into path: String, store: BlobStore) -> Bool {
        let template = FileSystem.join(store.interimPath, "catalog-template-" + SecureRandom.hex(8) + ".interim")
        defer { for suffix in ["", "-wal", "-shm"] { try? FileSystem.remove(template + suffix) } }
        do {
            let fresh = try Catalog.create(at: template, settings: VaultSettings(vaultID: "template"))
            try fresh.close()
            try checkpoint(template)
            var page = [UInt8](repeating: 0, count: 65_536)
            let n = try FileDescriptor.with(template, O_RDONLY) { fd in try page.withUnsafeMutableBytes { try fd.readFully(into: $0) } }
            guard n >= 100 else { return false }
            var pageSize = Int(page[16]) << 8 | Int(page[17])
            if pageSize == 1 { pageSize = 65_536 }
            guard pageSize >= 512, pageSize <= n else { return false }
            page.removeLast(page.count - pageSize)
            for i in 28..<32 { page[i] = 0 }  // in-header page count: unknown
            let target = try FileDescriptor.open(path, O_WRONLY)
            defer { target.close() }
            let written = page.withUnsafeBytes { pwrite(target.raw, $0.baseAddress, pageSize, 0) }
            return written == pageSize
        } catch {
            return false
        }
    }

    static func readRows(_ db: Database, _ table: String, rowid: Bool) -> ([Row], Bool) {
        var rows: [Row] = []
        guard rowid else {
            do {
                let cursor = try Row.fetchCursor(db, sql: "SELECT * FROM \"\(table)\"")
                while let row = try cursor.next() { rows.append(row.copy()) }
                return (rows, true)
            } catch { return (rows, false) }
        }
        var after = Int64.min
        var step: Int64 = 1
        var complete = true
        for _ in 0..<48 {
            do {
                let cursor = try Row.fetchCursor(db, sql: "SELECT rowid AS \"__salvage_rowid\", * FROM \"\(table)\" WHERE rowid > ? ORDER BY rowid",
                                                 arguments: [after])
                while let row = try cursor.next() {
                    after = row["__salvage_rowid"]
                    let copy = row.copy()
                    var trimmed: [String: DatabaseValue] = [:]
                    for (name, value) in copy where name != "__salvage_rowid" { trimmed[name] = value }
                    rows.append(Row(trimmed))
                }
                return (rows, complete)
            } catch {
                complete = false
                let (next, overflow) = after.addingReportingOverflow(step)
                if overflow { break }
                after = next
                step = min(step * 4, 1 << 40)
            }
        }
        return (rows, false)
    }

    /// Moves everything in the database's WAL into its main file.
    static func checkpoint(_ path: String) throws {
        let queue = try DatabaseQueue(path: path)
        _ = try queue.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
        try queue.close()
    }

    static func isoStamp() -> String {
        var t = time(nil)
        var parts = tm()
        gmtime_r(&t, &parts)
        return String(format: "%04d%02d%02dT%02d%02d%02dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                      Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }
}
