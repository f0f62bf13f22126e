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
        var added = [Bool](repeating: false, count: plan.receipts.count)  // a file was added to it
        var tally = ManifestProgress(phase: .importing, rowsDone: 0, rowsTotal: plan.files.count, bytesDone: 0,
                                     bytesTotal: plan.bytes)
        // Contents whose bringing row could not be read: the next batch's first row with it tries its own
        // file (the rows of the same batch fail with it). Settled before the next batch is planned.
        var retry = Set<Digest>()
        let writer = ManifestRowWriter(plan: plan, vault: self)
        try ingest(Array(plan.files.indices), source: { row in
            guard !plan.files.known(row) else { return nil }
            let id = plan.files.id(row)
            guard plan.files.firstNew(row) || retry.remove(id) != nil else { return nil }
            let f = plan.files[row]
            return .file(InputFile(checked: f.path, size: f.size, id: f.id.blobID, mediaType: f.mediaType))
        }, failed: { row, error in
            retry.insert(plan.files.id(row))
            return Self.message(error)
        }, rows: { w, batch in
            try writer.write(w, batch)
        }, committed: { rows, done in
            for row in rows {
                let f = plan.files[row.row]
                switch row.outcome {
                case .failed(let message): report.failed.append(FailedFile(path: f.given, error: message))
                case .imported(let heldBy, let deduplicated, let existing):
                    if !existing {
                        report.added += 1
                        if !added[f.receipt] { added[f.receipt] = true; report.receiptsAdded += 1 }
                    } else {
                        report.existing += 1
                    }
                    try each(ImportedFile(id: heldBy ?? plan.receipts.id(f.receipt), path: f.given, sha256: f.id.hex,
                                          size: f.size, deduplicated: deduplicated, existing: existing))
                }
            }
            tally.bytesDone += (tally.rowsDone..<done).reduce(0) { $0 + plan.files.size($1) }
            tally.rowsDone = done
            progress?(tally)
        })
        return report
    }
}

/// What a row of pass 2 became (its report is made of it once its batch committed, one row at a time).
struct ManifestRowReport: Sendable {
    enum Outcome: Sendable {
        /// Its file could not be read again, or changed since it was checked.
        case failed(String)
        /// `heldBy`: the receipt that already held the file under this name (a row without id).
        case imported(heldBy: String?, deduplicated: Bool, existing: Bool)
    }
    /// The row's index in the plan.
    let row: Int
    let outcome: Outcome
}

/// The rows of each batch of pass 2, in the batch's transaction. Batches commit one at a time and
/// in order (`Vault.ingest`), so the state carried from one to the next needs no lock.
final class ManifestRowWriter: @unchecked Sendable {
    let plan: Vault.ManifestPlan
    let vault: Vault
    /// Per receipt, by index (arrays, not sets: a manifest may describe 100,000 receipts).
    private var hasFile: [Bool]
    private var started: [Bool]  // its row was written
    private var nextPosition: [Int]  // -1: not known yet
    private var tagJSON: [[String]: String] = [:]
    private var first = true

    init(plan: Vault.ManifestPlan, vault: Vault) {
        self.plan = plan
        self.vault = vault
        hasFile = [Bool](repeating: false, count: plan.receipts.count)
        for i in plan.files.indices { hasFile[plan.files.receipt(i)] = true }
        started = [Bool](repeating: false, count: plan.receipts.count)
        nextPosition = [Int](repeating: -1, count: plan.receipts.count)
    }

    func write(_ w: CatalogWriter, _ items: [(Int, IngestOutcome)]) throws -> [ManifestRowReport] {
        let db = w.db
        if first {
            first = false
            // A page cache that holds the pages of the randomly keyed indexes (ids, hashes) a batch
            // touches, so each is written once per transaction, not spilled and written again: see
            // "Manifest import" in docs/DESIGN.md.
            try w.setCacheSize(kibibytes: Vault.manifestCacheKiB)
            for name in plan.newZones where try Catalog.zone(db, name) == nil {
                try w.insertZone(Zone(name: name, createdAt: w.now))
            }
            // Receipts with no file are written with the first batch.
            for index in plan.receipts.indices where !hasFile[index] {
                try writeReceipt(w, plan.receipts[index], id: plan.receipts.id(index))
                started[index] = true
            }
        }
        let batch = items.map { plan.files[$0.0] }  // decoded once; offsets below are into it
        // The row that brought each content of this batch, and what became of its bytes.
        var bringer: [Digest: Int] = [:]
        var unreadable: [Digest: String] = [:]
        var deduplicated: [Digest: Bool] = [:]
        for (offset, (_, outcome)) in items.enumerated() {
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
        if batch.contains(where: { !plan.receipts.given($0.receipt) }) {
            for f in batch { blobRows[f.id, default: 0] += 1 }
        }
        if !batch.contains(where: { !plan.receipts.given($0.receipt) && blobRows[$0.id, default: 0] > 1 }) {
            // By the id's bytes: the order of its lowercase hex text.
            let ids = rowOrder.map { plan.receipts.key(batch[$0].receipt) }
            var positions = Array(rowOrder.indices)
            positions.sort { ids[$0] != ids[$1] ? ids[$0] < ids[$1] : $0 < $1 }
            rowOrder = positions.map { rowOrder[$0] }
        }
        var out = [ManifestRowReport?](repeating: nil, count: batch.count)
        var recorded = Set<Int>()  // receipts whose outbox entry this batch wrote
        var touched = Set<Int>()   // receipts that gained an attachment
        for offset in rowOrder {
            let f = batch[offset]
            // Held by some receipt already: in the vault before, or written by an earlier row.
            var held = true
            var isDeduplicated = true
            if let bringing = bringer[f.id] {
                if let error = unreadable[f.id] {
                    out[offset] = ManifestRowReport(row: items[offset].0, outcome: .failed(error))
                    continue
                }
                held = offset != bringing
                if !held { isDeduplicated = deduplicated[f.id] ?? true }
            }
            // The receipt is decoded (metadata and all) only where its row is written.
            if !plan.receipts.given(f.receipt), !started[f.receipt], held,
               let existing = try Catalog.receipt(db, holding: f.id.blobID, named: f.name, inZone: plan.receipts.zone(f.receipt)) {
                // Without an id, a file already filed under this name in the zone is not added again.
                out[offset] = ManifestRowReport(row: items[offset].0,
                                                outcome: .imported(heldBy: existing, deduplicated: true, existing: true))
                continue
            }
            let receiptID = plan.receipts.id(f.receipt)
            if !started[f.receipt] {
                if try writeReceipt(w, plan.receipts[f.receipt], id: receiptID) { recorded.insert(f.receipt) }
                started[f.receipt] = true
            }
            var position: Int
            if nextPosition[f.receipt] >= 0 {
                position = nextPosition[f.receipt]
            } else if plan.receipts.exists(f.receipt) {
                position = try Catalog.nextPosition(db, receiptID: receiptID)
            } else {
                position = 0
            }
            let inserted = try w.insertAttachment(receiptID: receiptID, blob: f.id.blobID, filename: f.name,
                                                  mediaType: f.mediaType, position: position)
            if inserted {
                position += 1
                touched.insert(f.receipt)
            }
            nextPosition[f.receipt] = position
            // The stat cache pays for files whose hashing costs more than a lookup.
            if !f.cached, f.size >= Vault.statCacheMinimum, let status = f.status {
                try w.rememberImport(path: f.path, status: status, blob: f.id.blobID)
            }
            out[offset] = ManifestRowReport(row: items[offset].0,
                                            outcome: .imported(heldBy: nil, deduplicated: isDeduplicated, existing: !inserted))
        }
        for index in touched.subtracting(recorded).sorted() {
            let id = plan.receipts.id(index)
            try w.touchReceipt(id)
            try w.recordChange(id, zone: plan.receipts.zone(index), .upsert)
        }
        return out.compactMap { $0 }
    }

    /// Inserts a new receipt or applies the manifest's metadata to the existing one. Returns whether
    /// the row changed (and so wrote its outbox entry).
    @discardableResult
    private func writeReceipt(_ w: CatalogWriter, _ planned: ManifestReceipt, id: String) throws -> Bool {
        if planned.exists, var stored = try Catalog.receipt(w.db, id) {
            let before = stored
            planned.metadata.apply(to: &stored)
            guard stored != before else { return false }
            stored.modifiedAt = w.now
            try w.updateReceipt(stored)
            try w.recordChange(stored.id, zone: stored.zone, .upsert)
            return true
        }
        var receipt = Receipt(id: id, zone: planned.zone, createdAt: w.now, modifiedAt: w.now)
        planned.metadata.apply(to: &receipt)
        let tags: String
        if let known = tagJSON[receipt.tags] {
            tags = known
        } else {
            // The tags column as GRDB's Codable records write it (JSON), computed once per tag set.
            let data = try Receipt.databaseJSONEncoder(for: "tags").encode(receipt.tags)
            tags = String(decoding: data, as: UTF8.self)
            tagJSON[receipt.tags] = tags
        }
        try w.insertReceipt(receipt, tagsJSON: tags)
        try w.recordChange(receipt.id, zone: receipt.zone, .upsert)
        return true
    }
}
