import BlobStore
import GRDB
import ReceiptCatalog
import ReceiptVault
import ReceiptWire

/// The push half of a sync: the outbox, a page at a time.
extension SyncEngine {
    struct Outgoing {
        var zone: ZoneRef
        var seq: Int64
        var id: ReceiptID
        var record: WirePushRecord
    }

    /// Pushes the outbox, a page of `pushPage` receipts at a time (the first sync of a vault of a
    /// million receipts held every record and the list of every blob at once: 213 MB at 100,000):
    /// per page, the blobs the server wants first, then the records, zone by zone. Conflicts are
    /// merged and the merged versions pushed again (up to three rounds). Entries written during the
    /// sync (after the outbox's last entry when it started) wait for the next one, as before.
    func push(_ zones: [ZoneRef]) async throws {
        let byName = Dictionary(zones.map { ($0.local, $0) }, uniquingKeysWith: { a, _ in a })
        var refused = Set<ReceiptID>()
        guard let last = try vault.catalogRead({ try Outbox.lastSeq($0) }) else { return }
        var after = Int64.min
        while true {
            try checkNotWiping()
            let page = try vault.catalogRead { try Outbox.pendingPage($0, after: after, through: last, limit: self.pushPage) }
            guard let end = page.last?.seq else { return }
            after = end
            try await push(page, zones: byName, refused: &refused)
        }
    }

    /// Pushes one page of outbox entries, and the merges of its conflicts (up to three rounds).
    private func push(_ page: [Outbox.Entry], zones byName: [String: ZoneRef], refused: inout Set<ReceiptID>) async throws {
        var entries = page
        for _ in 0..<3 {
            try checkNotWiping()
            let outgoing = try collectOutgoing(byName, entries, skip: refused)
            if outgoing.isEmpty { return }
            progress("pushing \(outgoing.count) change(s)")
            try await uploadBlobs(for: outgoing)
            var conflicts: [Conflict] = []
            // Deletes of moved receipts from the zones they left go first.
            let moves = Dictionary(grouping: outgoing.filter { $0.seq < 0 }, by: { $0.zone.local })
            let regular = Dictionary(grouping: outgoing.filter { $0.seq >= 0 }, by: { $0.zone.local })
            for grouped in [moves, regular] {
                for name in grouped.keys.sorted() {
                    guard let items = grouped[name], let zone = items.first?.zone else { continue }
                    var rest = items[...]
                    while !rest.isEmpty {
                        try checkNotWiping()
                        let batch = Array(rest.prefix(pushBatch))
                        rest = rest.dropFirst(batch.count)
                        let results: [WirePushResult]
                        do {
                            results = try await client.push(owner: zone.owner, name: zone.remote, records: batch.map(\.record))
                        } catch let error as SyncError where error.status == 403 || error.status == 404 {
                            report.errors.append(error.message)
                            refused.formUnion(items.map(\.id))
                            break
                        }
                        conflicts += try recordResults(results, batch, refused: &refused)
                    }
                }
            }
            if conflicts.isEmpty { return }
            try await resolve(conflicts)
            let ids = conflicts.map(\.id)
            entries = try vault.catalogRead { try Outbox.pending($0, of: ids) }
        }
    }

    /// The records of these outbox entries as they are now (a receipt's latest entry each).
    func collectOutgoing(_ zones: [String: ZoneRef], _ entries: [Outbox.Entry], skip: Set<ReceiptID>) throws -> [Outgoing] {
        try vault.catalogTransaction { w in
            let db = w.db
            var out: [Outgoing] = []
            for pending in entries {
                let (id, change) = (pending.receiptID, (zone: pending.zone, seq: pending.seq))
                if skip.contains(id) { continue }
                let current = try LocalStore.content(db, id)
                let state = try LocalStore.state(db, id)
                let zoneName = current?.zone ?? change.zone
                guard let zone = zones[zoneName] else { continue }
                if current == nil && (state == nil || state?.base == nil) {
                    // Created and deleted before the server saw it, or already deleted there.
                    try w.settle(id, through: change.seq)
                    continue
                }
                let baseTag = state?.zone == zoneName ? state?.changeTag : nil
                if let state, state.zone != zoneName, state.base != nil, let old = zones[state.zone] {
                    // The receipt moved zones: delete it from the zone it left first (seq -1: a move's
                    // delete, which leaves the outbox and the sync state to the push into the new zone).
                    out.append(Outgoing(zone: old, seq: -1, id: id, record: WirePushRecord(id: id.text, baseTag: state.changeTag, receipt: nil)))
                }
                out.append(Outgoing(zone: zone, seq: change.seq, id: id,
                                    record: WirePushRecord(id: id.text, baseTag: baseTag, receipt: current?.receipt)))
            }
            return out
        }
    }

    /// Asks the server which of the referenced blobs it wants, and uploads those in bundles.
    func uploadBlobs(for outgoing: [Outgoing]) async throws {
        let sizes = Self.blobSizes(outgoing.map(\.record.receipt))
        if sizes.isEmpty { return }
        let want = try await client.want(sizes.keys.sorted())
        let bundles = WireBundle.split(want) { sizes[$0] ?? 0 }
        let transfer = self.transfer, vaultPath = vault.path, progress = self.progress, total = want.count
        // Per bundle: how many of its blobs were not uploaded, and why.
        let failures = try await Self.concurrently(bundles, limit: transfersAtOnce) { i, bundle -> (count: Int, messages: [String]) in
            try Self.checkNotWiping(vaultPath)
            progress("uploading blobs: bundle \(i + 1) of \(bundles.count) (\(total) blobs)")
            do {
                let problems = try await transfer.upload(bundle)
                return (problems.count, problems)
            } catch let error as SyncError where error.status == 422 && bundle.count > 1 {
                // One blob the server refused (its bytes here do not hash to its address) refuses its
                // whole bundle: the bundle's blobs go again one by one, so that only it stays behind.
                var failed: [String] = []
                for hex in bundle {
                    do {
                        failed += try await transfer.upload([hex])
                    } catch let error as SyncError where error.status == 422 || error.status == 413 {
                        failed.append("blob \(hex) was not uploaded: \(error.message)")
                    }
                }
                return (failed.count, failed)
            } catch let error as SyncError where error.status == nil || error.status == 422 || error.status == 413 {
                let what = bundle.count == 1 ? "blob \(bundle[0]) was" : "\(bundle.count) blobs were"
                return (bundle.count, ["\(what) not uploaded: \(error.message)"])
            }
        }
        report.blobsUploaded += want.count - failures.reduce(0) { $0 + $1.count }
        report.errors += failures.flatMap(\.messages)
    }

    /// A pushed record the server holds another version of: the receipt and that version.
    typealias Conflict = (zone: ZoneRef, id: ReceiptID, server: WireRecord)

    /// Records the server's answers: saved records leave the outbox (up to the change pushed);
    /// conflicts are returned for merging; rejections are reported. An answer is matched to its
    /// record by id, read as one: an older server answers in the case it was sent, a newer lowercase.
    func recordResults(_ results: [WirePushResult], _ batch: [Outgoing], refused: inout Set<ReceiptID>) throws -> [Conflict] {
        let byID = Dictionary(batch.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        var conflicts: [Conflict] = []
        var rejected: [String] = []
        try vault.catalogTransaction { w in
            let db = w.db
            for result in results {
                guard let item = ReceiptID(result.id).flatMap({ byID[$0] }) else { continue }
                if item.seq < 0 {
                    // A moved receipt's delete from its former zone: a conflict means someone edited it
                    // there meanwhile; that version stays in the former zone.
                    if result.status == .rejected { rejected.append(result.error ?? "receipt \(result.id) was refused by the server") }
                    continue
                }
                switch result.status {
                case .saved:
                    guard let tag = result.changeTag else { continue }
                    try LocalStore.setState(w, item.id, zone: item.zone.local, tag: tag, base: item.record.receipt)
                    try w.settle(item.id, through: item.seq)
                    if item.record.baseTag == nil { firstPushed.note(item.record.receipt) }
                    report.pushed += 1
                case .conflict:
                    let server = result.server ?? WireRecord(id: result.id, changeTag: "", receipt: nil)
                    conflicts.append((item.zone, item.id, server))
                case .rejected:
                    rejected.append(result.error ?? "receipt \(result.id) was refused by the server")
                    refused.insert(item.id)
                }
            }
        }
        report.errors += rejected
        return conflicts
    }
}
