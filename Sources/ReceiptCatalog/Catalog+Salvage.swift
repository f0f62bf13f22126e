import BlobStore
import Foundation
import GRDB

/// Reading what can be read of a damaged catalog, for fsck's rebuild (docs/DESIGN.md, "fsck").
/// Rows read back from a damaged catalog, table by table, as far as SQLite could read them.
public struct SalvagedCatalog {
    public var tables: [String: [Row]] = [:]
    /// Tables that could not be read to their end.
    public var incomplete: Set<String> = []
    public var notes: [String] = []

    public func rows(_ table: String) -> [Row] { tables[table] ?? [] }
}

extension Catalog {
    /// Tables copied from a damaged catalog, parents before children. `importCache` is left out: it
    /// only saves re-hashing, and a stale entry is worse than none.
    public static let salvageOrder = ["settings", "zones", "blobs", "receipts", "attachments", "changes", "syncState"]

    /// Reads what SQLite can of a damaged catalog, from a copy (the original goes to quarantine
    /// untouched). Tables with a rowid are read past damaged pages by seeking beyond them.
    public static func salvage(_ catalogPath: String, scratch: String) -> SalvagedCatalog {
        var result = SalvagedCatalog()
        guard FileSystem.exists(catalogPath) else { return result }
        let copyPath = FileSystem.join(scratch, "catalog-salvage-" + SecureRandom.hex(8) + ".interim")
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
            if transplantFirstPage(into: copyPath, scratch: scratch) {
                opened = openCopy()
                if opened != nil { result.notes.append("its first page was unreadable and was replaced by a fresh one to read the rest") }
                // Only the first migration's tables are sure to have their roots where a fresh
                // catalog has them (a later table's root depends on when the migration ran); the
                // outbox is written again anyway. Receipts and attachments are v8's tables
                // (`ReceiptRows`): where a catalog migrated from v7 has them is not where a fresh
                // one does. Their rows are read all the same (each is checked again before it is
                // kept), but counted as incomplete, so that no blob is taken for garbage for want
                // of the attachments that named it: it becomes a recovered receipt instead.
                tables = ["settings", "zones", "blobs", "receipts", "attachments"]
                result.incomplete.formUnion(["receipts", "attachments"])
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
    private static func transplantFirstPage(into path: String, scratch: String) -> Bool {
        let template = FileSystem.join(scratch, "catalog-template-" + SecureRandom.hex(8) + ".interim")
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
            try FileDescriptor.with(path, O_WRONLY) { target in try page.withUnsafeBytes { try target.write($0, at: 0) } }
            return true
        } catch {
            return false
        }
    }

    private static func readRows(_ db: Database, _ table: String, rowid: Bool) -> ([Row], Bool) {
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
    public static func checkpoint(_ path: String) throws {
        let queue = try DatabaseQueue(path: path)
        _ = try queue.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
        try queue.close()
    }
}

extension CatalogWriter {
    /// Inserts a salvaged row into the same table of the new catalog, by the columns both have.
    /// Returns false when the row was ignored (already present).
    public func copy(_ row: Row, into table: String, replace: Bool = false) throws -> Bool {
        let columns = Set(try db.columns(in: table).map(\.name))
        let names = row.columnNames.filter { columns.contains($0) }
        guard !names.isEmpty else { return false }
        // An address or a receipt id as an earlier version stored it (text) goes in as the bytes of
        // v12 and v13.
        let values = names.map { name -> DatabaseValue in
            let value = row[name] as DatabaseValue
            switch (table, name) {
            case (_, "sha256"): return BlobID.fromDatabaseValue(value)?.databaseValue ?? value
            case ("receipts", "id"), (_, "receiptID"): return ReceiptID.fromDatabaseValue(value)?.databaseValue ?? value
            default: return value
            }
        }
        let quoted = names.map { "\"\($0)\"" }.joined(separator: ", ")
        try db.execute(sql: "INSERT OR \(replace ? "REPLACE" : "IGNORE") INTO \"\(table)\" (\(quoted)) VALUES (\(placeholders(names.count)))",
                       arguments: StatementArguments(values))
        return db.changesCount > 0
    }

    /// A salvaged attachment row, keyed by the row number its receipt has in this catalog (a catalog
    /// before v8 named the receipt by id only); false when the receipt or the blob is not here.
    public func copyAttachment(_ row: Row) throws -> Bool {
        guard let receipt = ReceiptID.fromDatabaseValue(row["receiptID"] as DatabaseValue),
              let number = try Int64.fetchOne(db.cachedStatement(sql: "SELECT rowNumber FROM receipts WHERE id = ?"),
                                              arguments: [receipt]) else { return false }
        var values: [String: (any DatabaseValueConvertible)?] = [:]
        for (column, value) in row { values[column] = value }
        values["receiptRow"] = number
        return try copy(Row(values), into: "attachments")
    }

    /// Whether the catalog has a row for the blob.
    public func hasBlobRow(_ id: BlobID) throws -> Bool {
        try BlobRecord.exists(db, key: id)
    }
}

extension Catalog {
    /// Every blob address an attachment refers to (text that is no address left out: a rebuilt
    /// catalog's attachments are copied from a damaged one).
    public func referencedBlobs() throws -> Set<BlobID> {
        Set(try read { db in try DatabaseValue.fetchAll(db, sql: "SELECT DISTINCT sha256 FROM attachments") }.compactMap(BlobID.fromDatabaseValue))
    }
}
