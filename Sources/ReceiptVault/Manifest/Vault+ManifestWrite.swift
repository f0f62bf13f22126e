import BlobStore
import Foundation
import GRDB
import ReceiptCatalog

/// Pass 2 of a manifest import: the checked plan written through the ingest path (`Vault.ingest`),
/// one item per row. The first row of each content the vault lacks brings the file's bytes; the
/// other rows refer to a blob the vault holds or an earlier row brought.
extension Vault {
    /// The caller holds the vault lock shared, since before pass 1.
    func writeManifest(_ plan: ManifestPlan, progress: ((ManifestProgress) -> Void)?,
                       each: (ImportedFile) throws -> Void) throws -> ManifestSummary {
        var report = ManifestSummary()
        // Receipts that gained a file, while rows of theirs are still to come (not one flag per receipt
        // of the manifest: the report's memory does not grow with it either).
        var counted = Set<Int>()
        var tally = ManifestProgress(phase: .importing, rowsDone: 0, rowsTotal: plan.fileCount, bytesDone: 0,
                                     bytesTotal: plan.bytes)
        // Contents whose bringing row could not be read: the next batch's first row with it tries its own
        // file (the rows of the same batch fail with it). Settled before the next batch is planned.
        var retry = Set<Digest>()
        let writer = ManifestRowWriter(newZones: plan.newZones)
        var rowsDone = 0  // rows with a file whose batch committed
        do {
            try ingest(next: { try plan.next() }, source: { row in
                guard let f = row.file, !f.known else { return nil }
                guard f.firstNew || retry.remove(f.id) != nil else { return nil }
                return .file(InputFile(checked: f.path, size: f.size, id: f.id.blobID, mediaType: f.mediaType))
            }, failed: { row, error in
                if let f = row.file { retry.insert(f.id) }
                return Self.message(error)
            }, rows: { w, batch in
                try writer.write(w, batch)
            }, committed: { rows, _ in
                for row in rows {
                    switch row.outcome {
                    case .failed(let message): report.failed.append(FailedFile(path: row.given, error: message))
                    case .imported(let heldBy, let deduplicated, let existing):
                        if !existing {
                            report.added += 1
                            if counted.insert(row.receipt).inserted { report.receiptsAdded += 1 }
                        } else {
                            report.existing += 1
                        }
                        try each(ImportedFile(id: heldBy ?? ReceiptID(row.receiptID), path: row.given, sha256: row.id.hex,
                                              size: row.size, deduplicated: deduplicated, existing: existing))
                    }
                    if row.last { counted.remove(row.receipt) }
                    tally.bytesDone += row.size
                    tally.rowsDone += 1
                    rowsDone += 1
                }
                progress?(tally)
            })
        } catch {
            // The batches before the failure stay committed: the error says what the vault holds now.
            throw VaultError.partial(error, done: rowsDone == 0 ? nil : "\(report.receiptsAdded) receipt(s) with \(report.added) "
                + "file(s) were imported before it failed (the batches of the manifest's first \(rowsDone) rows with a file: "
                + "in the vault now, see `receipt list`); the rows after them were not")
        }
        return report
    }
}

/// What a row of pass 2 became (its report is made of it once its batch committed, one row at a time).
enum ManifestRowOutcome: Sendable {
    /// Its file could not be read again, or changed since it was checked.
    case failed(String)
    /// `heldBy`: the receipt that already held the file under this name (a row without id).
    case imported(heldBy: ReceiptID?, deduplicated: Bool, existing: Bool)
}

/// What the report needs of a row with a file once its batch committed: not the row itself (its
/// metadata and paths), which the batches of a transaction would otherwise hold until it commits.
struct ManifestReportRow: Sendable {
    let given: String
    let id: Digest
    let size: Int64
    let receipt: Int
    let receiptID: UUID
    let last: Bool
    let outcome: ManifestRowOutcome
}

/// A row with a file, as the batch's transaction needs it: references to the row read from the plan.
struct ManifestFileRow: Sendable {
    let file: ManifestFile
    let row: PlannedRow
    var receipt: Int { row.receipt }
    var planned: ManifestReceipt { row.planned }
    var last: Bool { row.last }
}

/// The rows of each batch of pass 2, in the batch's transaction. Batches commit one at a time and
/// in order (`Vault.ingest`), so the state carried from one to the next needs no lock.
final class ManifestRowWriter: @unchecked Sendable {
    let newZones: [String]
    /// A receipt from its first row to its last (rows of one id may be far apart in the manifest):
    /// what to write (its first row, which carries the metadata), whether it was, and its next position.
    private struct Open {
        let first: PlannedRow
        var started = false
        var nextPosition = -1  // not known yet
    }
    private var open: [Int: Open] = [:]
    private var tagJSON: [[String]: String] = [:]
    private var first = true

    init(newZones: [String]) { self.newZones = newZones }

    func write(_ w: CatalogWriter, _ items: [(PlannedRow, IngestOutcome)]) throws -> [ManifestReportRow] {
        let db = w.db
        if first {
            first = false
            // A page cache that holds the pages of the randomly keyed indexes (ids, hashes) a batch
            // touches, so each is written once per transaction, not spilled and written again: see
            // "Manifest import" in docs/DESIGN.md.
            try w.setCacheSize(kibibytes: Vault.manifestCacheKiB)
            for name in newZones where try Catalog.zone(db, name) == nil {
                try w.insertZone(Zone(name: name, createdAt: w.now))
            }
        }
        // Receipts with no file come first in the plan, so with the first batch.
        var rows: [ManifestFileRow] = []
        var outcomes: [IngestOutcome] = []
        for (row, outcome) in items {
            guard let file = row.file else {
                try writeReceipt(w, row.planned, id: row.planned.id)
                continue
            }
            rows.append(ManifestFileRow(file: file, row: row))
            outcomes.append(outcome)
            if row.first && !row.last { open[row.receipt] = Open(first: row) }
        }
        let batch = rows.map(\.file)  // offsets below are into it
        // The row that brought each content of this batch, and what became of its bytes.
        var bringer: [Digest: Int] = [:]
        var unreadable: [Digest: String] = [:]
        var deduplicated: [Digest: Bool] = [:]
        for (offset, outcome) in outcomes.enumerated() {
            switch outcome {
            case .none: continue
            case .ingested(let blob): deduplicated[batch[offset].id] = blob.deduplicated
            case .failed(let message): unreadable[batch[offset].id] = message
            }
            bringer[batch[offset].id] = offset
        }
        // The rows. What one row's outcome may take from another's is `Catalog.receipt(_:holding:named:inZone:)`, asked by rows
        // of receipts without an id, which finds attachments of that row's own blob. So unless such a
        // row shares its blob with another row of the batch, the rows are written in receipt-id order
        // (the rows of one receipt keep theirs): the indexes keyed by receipt id (receipts,
        // attachments, outbox) then have each page visited once per batch. Otherwise in manifest
        // order. The report keeps manifest order either way.
        var rowOrder = Array(batch.indices)
        var blobRows: [Digest: Int] = [:]
        // Only rows without id ask it: a batch of rows with ids need not count.
        if rows.contains(where: { !$0.planned.given }) {
            for f in batch { blobRows[f.id, default: 0] += 1 }
        }
        if !rows.contains(where: { !$0.planned.given && blobRows[$0.file.id, default: 0] > 1 }) {
            // By the id's bytes: the order of its lowercase hex text.
            let ids = rows.map { UUIDKey($0.planned.uuid) }
            rowOrder.sort { ids[$0] != ids[$1] ? ids[$0] < ids[$1] : $0 < $1 }
        }
        var out = [ManifestRowOutcome?](repeating: nil, count: batch.count)
        var recorded = Set<Int>()  // receipts whose outbox entry this batch wrote
        var touched: [Int: PlannedRow] = [:]  // receipts that gained an attachment (a row of each)
        for offset in rowOrder {
            let row = rows[offset]
            var state = open[row.receipt] ?? Open(first: row.row)
            out[offset] = try write(w, row, &state, bringer: bringer, unreadable: unreadable, deduplicated: deduplicated,
                                    offset: offset, recorded: &recorded, touched: &touched)
            if !row.last { open[row.receipt] = state } else { open[row.receipt] = nil }
        }
        for (index, row) in touched.sorted(by: { $0.key < $1.key }) where !recorded.contains(index) {
            let receipt = row.planned
            try w.touchReceipt(receipt.id, zone: receipt.zone)
        }
        return zip(rows, out).compactMap { row, outcome in
            outcome.map {
                ManifestReportRow(given: row.file.given, id: row.file.id, size: row.file.size, receipt: row.receipt,
                                  receiptID: row.planned.uuid, last: row.last, outcome: $0)
            }
        }
    }

    /// One row with a file, of the receipt whose state is `state`.
    private func write(_ w: CatalogWriter, _ row: ManifestFileRow, _ state: inout Open, bringer: [Digest: Int],
                       unreadable: [Digest: String], deduplicated: [Digest: Bool], offset: Int,
                       recorded: inout Set<Int>, touched: inout [Int: PlannedRow]) throws -> ManifestRowOutcome {
        let f = row.file
        // Held by some receipt already: in the vault before, or written by an earlier row.
        var held = true
        var isDeduplicated = true
        if let bringing = bringer[f.id] {
            if let error = unreadable[f.id] { return .failed(error) }
            held = offset != bringing
            if !held { isDeduplicated = deduplicated[f.id] ?? true }
        }
        if !row.planned.given, !state.started, held,
           let existing = try Catalog.receipt(w.db, holding: f.id.blobID, named: f.name, inZone: row.planned.zone) {
            // Without an id, a file already filed under this name in the zone is not added again.
            return .imported(heldBy: existing, deduplicated: true, existing: true)
        }
        let receiptID = row.planned.id
        if !state.started {
            if try writeReceipt(w, state.first.planned, id: receiptID) { recorded.insert(row.receipt) }
            state.started = true
        }
        var position: Int
        if state.nextPosition >= 0 {
            position = state.nextPosition
        } else if row.planned.exists {
            position = try Catalog.nextPosition(w.db, receiptID: receiptID)
        } else {
            position = 0
        }
        let inserted = try w.insertAttachment(receiptID: receiptID, blob: f.id.blobID, size: f.size, filename: f.name,
                                              mediaType: f.mediaType, position: position)
        if inserted {
            position += 1
            touched[row.receipt] = row.row
        }
        state.nextPosition = position
        // The stat cache pays for files whose hashing costs more than a lookup.
        if !f.cached, f.size >= Vault.statCacheMinimum, let status = f.status {
            try w.rememberImport(path: f.path, status: status, blob: f.id.blobID)
        }
        return .imported(heldBy: nil, deduplicated: isDeduplicated, existing: !inserted)
    }

    /// Inserts a new receipt or applies the manifest's metadata to the existing one. Returns whether
    /// the row changed (and so wrote its outbox entry).
    @discardableResult
    private func writeReceipt(_ w: CatalogWriter, _ planned: ManifestReceipt, id: ReceiptID) throws -> Bool {
        if planned.exists, var stored = try Catalog.receipt(w.db, id) {
            let before = stored
            planned.metadata.apply(to: &stored)
            guard stored != before else { return false }
            stored.modifiedAt = w.now
            try w.changeReceipt(stored)
            return true
        }
        var receipt = Receipt(id: id, zone: planned.zone, createdAt: w.now, modifiedAt: w.now)
        planned.metadata.apply(to: &receipt)
        let tags: String
        if let known = tagJSON[receipt.tags] {
            tags = known
        } else {
            // Computed once per tag set.
            tags = try CatalogWriter.tagsJSON(receipt.tags)
            tagJSON[receipt.tags] = tags
        }
        try w.addReceipt(receipt, tagsJSON: tags)
        return true
    }
}
