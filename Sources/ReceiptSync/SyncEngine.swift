import BlobStore
import GRDB
import ReceiptCatalog
import ReceiptVault
import ReceiptWire

/// What one sync did (the `receipt sync --json` document).
public struct SyncReport: Codable, Sendable, Equatable {
    /// Records the server accepted from this vault.
    public var pushed = 0
    /// Records from the server applied to this vault.
    public var pulled = 0
    public var blobsUploaded = 0
    public var blobsDownloaded = 0
    /// Extracted texts offered to the server and taken from it (docs/PROTOCOL.md, "Extracted text").
    public var textsUploaded = 0
    public var textsDownloaded = 0
    /// Records changed on both sides, merged (docs/PROTOCOL.md).
    public var conflicts = 0
    /// One sentence per record or zone that could not be synced (the rest was).
    public var errors: [String] = []

    public init() {}
}

/// A zone as the sync engine addresses it: its local name and its place on the server.
struct ZoneRef: Sendable, Equatable {
    var local: String
    var owner: String
    var remote: String
    var role: ZoneRole
}


/// The client sync engine: push the outbox, then pull every visible zone (docs/PROTOCOL.md).
///
/// Crash safety, step by step: an outbox entry is removed only in the transaction that records the
/// server's acceptance (its new change tag); a zone's change token advances only in the transaction
/// that applies the page it ends, after the page's blobs are durable in the vault. A sync killed at
/// any instant therefore resumes by pushing again (a record the server already took comes back as
/// a conflict whose merge is a no-op) and by pulling again from the last committed token.
public final class SyncEngine {
    public typealias Progress = @Sendable (String) -> Void

    let vault: Vault
    let remote: RemoteConfig
    let client: SyncClient
    let transfer: BlobTransfer
    let progress: Progress
    var report = SyncReport()
    /// Own zones found re-created on the server during this sync, whose receipts are pushed again.
    var requeued: [ZoneRef] = []
    /// The server's protocol revision (2: a server before the revision exchange).
    var serverRevision = 2
    /// The server keeps extracted text (revision 3 or later).
    var serverKeepsText: Bool { serverRevision >= WireProtocol.textRevision }
    /// The server takes many texts in one upload (revision 5 or later); else one `PUT` each.
    var serverTakesTextBatches: Bool { serverRevision >= WireProtocol.textPutRevision }
    /// The account's text counter at the start of this sync (nil: a server before revision 4).
    var textSeq: Int64?
    /// Blobs of receipts the server took for the first time in this sync (see TextSync.swift).
    var firstPushed = FirstPushed()
    public var pageSize = WireProtocol.defaultPageSize
    public var pushBatch = 200
    /// Outbox entries pushed per page (records, their blobs' want list and uploads): what a push
    /// holds in memory however large the outbox.
    public var pushPage = 2_000
    /// Blob uploads or downloads in flight at once.
    public var transfersAtOnce = 4

    public init(vault: Vault, remote: RemoteConfig, progress: @escaping Progress = { _ in }) throws {
        self.vault = vault
        self.remote = remote
        self.client = try remote.client()
        self.transfer = BlobTransfer(vault: vault, client: client)
        self.progress = progress
    }

    /// Syncs every zone the account can see (or only `zone`, by its local name). Holds the vault's
    /// sync lock throughout; stops early, with an error, when a wipe asks it to.
    public func run(zone filter: String? = nil) async throws -> SyncReport {
        let lock = try await SyncLock.acquire(vaultPath: vault.path)
        defer { withExtendedLifetime(lock) {} }
        report = SyncReport()
        requeued = []
        try checkNotWiping()
        transfer.removeStaleStaging()
        let info = try await client.accountInfo()
        let account = info.account
        serverRevision = info.revision ?? 2
        textSeq = info.textSeq
        firstPushed = FirstPushed()
        guard account == remote.account else {
            throw SyncError("the token set for this vault belongs to the account \(account), not to \(remote.account): run `receipt remote set` again")
        }
        var zones = try await reconcileZones()
        if let filter {
            zones = zones.filter { $0.local == filter }
            if zones.isEmpty { throw SyncError("no zone '\(filter)' to sync (see `receipt zone list`)") }
        }
        try await push(zones)
        for zone in zones { try await pull(zone) }
        if !requeued.isEmpty { try await push(requeued) }
        if serverKeepsText {
            try await uploadTexts()
            try await pullTexts()
        }
        return report
    }

    func checkNotWiping() throws { try Self.checkNotWiping(vault.path) }

    static func checkNotWiping(_ vaultPath: String) throws {
        if SyncLock.wipeRequested(vaultPath: vaultPath) || !FileSystem.exists(FileSystem.join(vaultPath, Catalog.fileName)) {
            throw SyncError("sync stopped: the vault \(vaultPath) is being wiped")
        }
    }

    /// Runs `body` over `items` with at most `limit` at once; results in the order of `items`.
    /// The first error cancels the rest and is thrown.
    static func concurrently<T: Sendable, R: Sendable>(_ items: [T], limit: Int,
                                                _ body: @escaping @Sendable (Int, T) async throws -> R) async throws -> [R] {
        try await withThrowingTaskGroup(of: (Int, R).self) { group in
            var results = [R?](repeating: nil, count: items.count)
            var next = 0
            while next < min(limit, items.count) {
                let i = next, item = items[i]
                group.addTask { (i, try await body(i, item)) }
                next += 1
            }
            while let (i, result) = try await group.next() {
                results[i] = result
                if next < items.count {
                    let j = next, item = items[j]
                    group.addTask { (j, try await body(j, item)) }
                    next += 1
                }
            }
            return results.compactMap { $0 }
        }
    }

    // MARK: Zones

    /// Creates this account's local zones on the server, learns zones created elsewhere or shared
    /// with the account (`OWNER/NAME`, with their role), and drops local copies of zones the
    /// account can no longer see (unshared or deleted by their owner).
    func reconcileZones() async throws -> [ZoneRef] {
        let me = remote.account
        var serverZones = try await client.zones()
        let local = try vault.catalogRead { try Catalog.zones($0) }
        let mine = Set(serverZones.filter { $0.owner == me }.map(\.name))
        var created = false
        for zone in local where zone.owner == nil && !mine.contains(zone.name) {
            guard WireName.isValid(zone.name) else {
                report.errors.append("zone '\(zone.name)' cannot be synced: its name is not a valid zone name")
                continue
            }
            try await client.createZone(owner: me, name: zone.name)
            created = true
        }
        if created { serverZones = try await client.zones() }
        let others = Set(serverZones.filter { $0.owner != me }.map { "\($0.owner)/\($0.name)" })
        try vault.catalogTransaction { w in
            for s in serverZones {
                if s.owner == me {
                    if var z = try Catalog.zone(w.db, s.name) {
                        if z.shared != s.shared {
                            z.shared = s.shared
                            try w.updateZone(z)
                        }
                    } else {
                        try w.insertZone(Zone(name: s.name, createdAt: w.now))
                    }
                } else {
                    let name = "\(s.owner)/\(s.name)"
                    if var z = try Catalog.zone(w.db, name) {
                        z.owner = s.owner
                        z.role = ZoneRole(s.role)
                        z.shared = true
                        try w.updateZone(z)
                    } else {
                        try w.insertZone(Zone(name: name, owner: s.owner, role: ZoneRole(s.role), shared: true, createdAt: w.now))
                    }
                }
            }
            for z in local where z.owner != nil && !others.contains(z.name) {
                try w.dropZone(z.name)
            }
        }
        return serverZones.map { s in
            ZoneRef(local: s.owner == me ? s.name : "\(s.owner)/\(s.name)", owner: s.owner, remote: s.name, role: ZoneRole(s.role))
        }.sorted { $0.local < $1.local }
    }

    /// Merges each conflicting record (base, local, server) and keeps the merge pending when it
    /// differs from the server's version.
    func resolve(_ conflicts: [Conflict]) async throws {
        try await withBlobs(Self.blobSizes(conflicts.map(\.server.receipt))) { w in
            for (zone, id, server) in conflicts {
                try self.mergeIn(w, zone: zone, id: id, server: server)
                self.report.conflicts += 1
            }
        }
    }

    /// Applies a server version to a record with local changes: 3-way merge, outbox kept only when
    /// the merge differs from the server's version.
    func mergeIn(_ w: CatalogWriter, zone: ZoneRef, id: ReceiptID, server: WireRecord) throws {
        let db = w.db
        let current = try LocalStore.content(db, id)
        let local = current?.zone == zone.local ? current?.receipt : nil
        let state = try LocalStore.state(db, id)
        let merged = ReceiptMerge.merge(base: state?.base, local: local, server: server.receipt)
        if !LocalStore.same(merged, local) {
            try LocalStore.apply(w, id: id, zone: zone.local, content: merged)
        }
        if !server.changeTag.isEmpty {
            try LocalStore.setState(w, id, zone: zone.local, tag: server.changeTag, base: server.receipt)
        }
        if LocalStore.same(merged, server.receipt) {
            try w.settle(id)
        } else {
            try LocalStore.ensurePending(w, id, zone: zone.local, deleted: merged == nil)
        }
    }

    // MARK: Pull

    /// Pulls `zone` page by page: each page's blobs are downloaded and made durable first, then the
    /// page's rows and the zone's new change token commit in one transaction. The next page and its
    /// blobs are fetched while a page is installed and committed. Holds the vault lock shared
    /// throughout, so gc cannot take a blob file installed (or adopted), or a blob the vault was found
    /// to hold, before a page refers to it; taken as the vault takes it, so a pull that waited for
    /// `fsck --repair` refuses to go on with the catalog the repair set aside.
    func pull(_ zone: ZoneRef) async throws {
        try await vault.whileLocked(.shared) {
            var token = try vault.catalogRead { db in try Catalog.changeToken(db, zone: zone.local) }
            var restarted = false
            while true {
                do {
                    try await pullPages(zone, since: token)
                    return
                } catch let error as SyncError where error.status == 410 && !restarted {
                    try forget(zone)
                    token = nil
                    restarted = true
                }
            }
        }
    }

    private func pullPages(_ zone: ZoneRef, since start: String?) async throws {
        let pages = PageFetcher(zone: zone, vault: vault, client: client, transfer: transfer, progress: progress,
                                pageSize: pageSize, limit: transfersAtOnce)
        // A page fetched ahead and abandoned (an error) leaves staging files the next sync removes.
        var ahead: Task<PageFetcher.Page, Error>? = Task { try await pages.fetch(since: start) }
        defer { ahead?.cancel() }
        while let next = ahead {
            let fetched = try await next.value
            let page = fetched.page
            // Blobs this page brings are not fetched again for the next one: this page commits first.
            let coming = Set(Self.blobSizes(page.records.map(\.receipt)).keys)
            ahead = page.more ? Task { try await pages.fetch(since: page.changeToken, excluding: coming) } : nil
            try checkNotWiping()
            try commit(fetched.blobs) { w in
                for record in page.records { try self.applyPulled(w, zone: zone, record: record) }
                try w.setChangeToken(page.changeToken, zone: zone.local)
            }
        }
    }

    /// Fetches a page of a zone's changes and the blobs its records need (off the engine, so the next
    /// page can be fetched while the current one commits).
    struct PageFetcher: Sendable {
        typealias Page = (page: WireChangesResponse, blobs: [FetchedBlob])
        let zone: ZoneRef
        let vault: Vault
        let client: SyncClient
        let transfer: BlobTransfer
        let progress: Progress
        let pageSize: Int
        let limit: Int

        func fetch(since: String?, excluding coming: Set<String> = []) async throws -> Page {
            try SyncEngine.checkNotWiping(vault.path)
            let page = try await client.changes(owner: zone.owner, name: zone.remote, since: since, limit: pageSize)
            if !page.records.isEmpty { progress("pulling \(zone.local): \(page.records.count) change(s)") }
            let blobs = SyncEngine.blobSizes(page.records.map(\.receipt)).filter { !coming.contains($0.key) }
            return (page, try await SyncEngine.fetchMissing(blobs, vault: vault, transfer: transfer, limit: limit, progress: progress))
        }
    }

    /// The server's zone is not the one this vault synced with (deleted and created again, e.g. by
    /// `wipe --remote` elsewhere). The owner's receipts are queued to be pushed into the new zone;
    /// a participant's copy is dropped and pulled again from the owner's new zone.
    func forget(_ zone: ZoneRef) throws {
        try vault.catalogTransaction { w in
            if zone.role == .owner {
                try w.clearSyncState(zone: zone.local)
                try w.requeue(zone: zone.local)
            } else {
                try w.dropReceipts(zone: zone.local)
            }
            try w.setChangeToken(nil, zone: zone.local)
        }
        if zone.role == .owner { requeued.append(zone) }
    }

    func applyPulled(_ w: CatalogWriter, zone: ZoneRef, record: WireRecord) throws {
        let db = w.db
        // The wire's door: the id is read once here (either case; the vault writes it lowercase).
        guard let id = ReceiptID(record.id) else {
            report.errors.append("a record of zone \(zone.local) was skipped: '\(record.id.prefix(64))' is not a receipt id (a UUID)")
            return
        }
        let state = try LocalStore.state(db, id)
        if state?.changeTag == record.changeTag { return } // this vault's own push coming back
        if let problem = record.receipt?.validationError() {
            report.errors.append("receipt \(id) from zone \(zone.local) was skipped: \(problem)")
            return
        }
        let current = try LocalStore.content(db, id)
        if let current, current.zone != zone.local {
            // The receipt moved between zones: the former zone's tombstone says nothing about it,
            // the new zone's version is where it lives now.
            guard let receipt = record.receipt else { return }
            try LocalStore.apply(w, id: id, zone: zone.local, content: receipt)
            try LocalStore.setState(w, id, zone: zone.local, tag: record.changeTag, base: receipt)
            try w.settle(id)
            report.pulled += 1
            return
        }
        if try LocalStore.hasPending(db, id) {
            try mergeIn(w, zone: zone, id: id, server: record)
        } else {
            if !LocalStore.same(current?.receipt, record.receipt) {
                try LocalStore.apply(w, id: id, zone: zone.local, content: record.receipt)
            }
            try LocalStore.setState(w, id, zone: zone.local, tag: record.changeTag, base: record.receipt)
        }
        report.pulled += 1
    }

    /// The blobs the receipts attach: address → size, as the records say.
    static func blobSizes(_ receipts: [WireReceipt?]) -> [String: Int64] {
        var sizes: [String: Int64] = [:]
        for receipt in receipts { for a in receipt?.attachments ?? [] { sizes[a.sha256] = a.size } }
        return sizes
    }

    /// Downloads the blobs among `blobs` (address → size, as the records say) the vault lacks, holding
    /// the vault lock shared (so gc cannot take an installed but not yet referenced file), then runs
    /// `body` in one transaction that also inserts their rows.
    func withBlobs(_ blobs: [String: Int64], _ body: (CatalogWriter) throws -> Void) async throws {
        try await vault.whileLocked(.shared) {
            try commit(try await Self.fetchMissing(blobs, vault: vault, transfer: transfer, limit: transfersAtOnce,
                                                   progress: progress), body)
        }
    }

    /// The blobs among `blobs` the vault lacks, downloaded in bundles (`limit` at once) and staged, or
    /// adopted: files a killed sync installed but did not get to reference.
    static func fetchMissing(_ blobs: [String: Int64], vault: Vault, transfer: BlobTransfer, limit: Int,
                             progress: @escaping Progress) async throws -> [FetchedBlob] {
        var ids = Set<BlobID>()
        for hex in blobs.keys {
            guard let id = BlobID(hex: hex) else { throw SyncError("\(hex) is not a blob address") }
            ids.insert(id)
        }
        let missing = try vault.catalogRead { db in try LocalStore.missingBlobs(db, ids) }
        var fetched: [FetchedBlob] = []
        var wanted: [BlobID] = []
        for id in missing {
            if let adopted = transfer.adopted(id) { fetched.append(adopted) } else { wanted.append(id) }
        }
        // Smaller bundles than uploads use: a page's blobs then keep every transfer slot busy.
        let bundles = WireBundle.split(wanted, target: WireBundle.targetBytes / 4) { blobs[$0.hex] ?? 0 }
        let total = wanted.count
        fetched += try await Self.concurrently(bundles, limit: limit) { i, bundle in
            try Self.checkNotWiping(vault.path)
            progress("downloading blobs: bundle \(i + 1) of \(bundles.count) (\(total) blobs)")
            return try await transfer.fetch(bundle)
        }.flatMap { $0 }
        return fetched
    }

    /// Hands the fetched blobs to the vault's ingest path: installed durably (one flush for all),
    /// then in one transaction their rows and `body`, on the catalog the vault opened. The caller
    /// holds the vault lock shared (the ingest path finds it held).
    func commit(_ fetched: [FetchedBlob], _ body: (CatalogWriter) throws -> Void) throws {
        report.blobsDownloaded += fetched.count
        try vault.ingestOnce(fetched.map(\.source)) { w, _ in try body(w) }
    }
}
