import BlobStore
import ReceiptWire

/// How far ahead `registerUploads` sets `touchedAt`: longer than any install takes, short enough
/// that the row of an upload whose server died before installing is collected within the hour.
let uploadReservationMilliseconds: Int64 = 3_600_000

/// Blobs, records and change tokens: the flow of each request, written once over the storage
/// protocol (Store/ServerStorage.swift). PushRules.swift holds push's verdicts, this the order.
extension ServerStore {
    /// The subset of `blobs` the caller must upload before a record referencing them is accepted:
    /// those the server lacks, and those the caller has not proved it holds.
    public func want(_ blobs: [String], caller: Account) async throws -> [String] {
        let ids = try blobs.map(ServerRules.blobAddress)
        let store = self.blobs
        return try await transaction(.read) { tx in
            var want: [String] = []
            for (blob, id) in zip(blobs, ids) {
                let known = try await tx.blobSize(blob) != nil && store.contains(id)
                let proved = try await ServerRules.hasProvedPossession(tx, blob: blob, caller: caller)
                if !known || !proved { want.append(blob) }
            }
            return want
        }
    }

    /// Records that `caller` uploaded bytes that hashed to each id, in one transaction, BEFORE the
    /// files are installed, and reserves the rows against the server's gc: `touchedAt` is set
    /// `uploadReservation` ahead, so a gc of any grace (even 0) spares them until `uploadsInstalled`
    /// sets it to now (docs/DESIGN.md, "Server gc"). Refused as over quota (and nothing recorded)
    /// when the blobs would take the caller past its quota.
    public func registerUploads(_ blobs: [(id: BlobID, size: Int64)], caller: Account) async throws {
        let rows = blobs.map { (hex: $0.id.hex, size: $0.size) }
        try await transaction(.write) { tx in
            let reservedUntil = ServerRules.now() + uploadReservationMilliseconds
            try await ServerRules.withinQuota(tx, accounts: [caller.id]) {
                for blob in rows {
                    try await tx.reserveBlob(blob.hex, size: blob.size, touchedAt: reservedUntil, possessor: caller.id)
                }
            }
        }
    }

    /// The one write order of every upload (sync or web): record possession and reserve the rows
    /// (quota checked), install the verified files durably, then end the reservation.
    func installUploads(_ staged: [StagedBlob], caller: Account) async throws {
        try await registerUploads(staged.map { ($0.id, $0.size) }, caller: caller)
        _ = try blobs.install(staged)
        try await uploadsInstalled(staged.map(\.id))
    }

    /// Ends the reservation `registerUploads` made: the blobs are in place, `touchedAt` is now.
    public func uploadsInstalled(_ ids: [BlobID]) async throws {
        try await transaction(.write) { tx in
            let now = ServerRules.now()
            for id in ids { try await tx.touchBlob(id.hex, at: now) }
        }
    }

    /// Each blob's size when `caller` may read it; nil otherwise (absent or not readable: the same answer).
    public func readableBlobSizes(_ ids: [BlobID], caller: Account) async throws -> [Int64?] {
        try await transaction(.read) { tx in
            var sizes: [Int64?] = []
            for id in ids {
                let readable = try await tx.readsZoneReferencing(account: caller.id, blob: id.hex)
                sizes.append(readable ? try await tx.blobSize(id.hex) : nil)
            }
            return sizes
        }
    }

    /// Applies a push to `owner/name` in one transaction holding the zone's lock, record by record:
    /// each record saved gets a new change tag and the zone's next sequence number, so tokens
    /// strictly increase per zone and each base tag is compared with the committed one. The
    /// records' blobs count against the zone's owner: a push that would take the owner past its
    /// quota is refused whole and nothing of it is kept.
    public func push(_ request: WirePushRequest, owner: String, name: String, caller: Account) async throws -> WirePushResponse {
        try ServerRules.checkPushSize(request)
        return try await transaction(.write) { tx in
            let zone = try await ServerRules.requireZone(tx, owner: owner, name: name, caller: caller, lock: true)
            try ServerRules.requireWriter(zone.visible, caller: caller)
            return try await ServerRules.withinQuota(tx, accounts: [zone.visible.ownerID]) {
                var ledger = ServerRules.PushLedger(seq: zone.seq)
                for record in request.records.map(ServerRules.canonical) {
                    let current = try await tx.record(zone: zone.visible.id, id: record.id)
                    let attachments = record.receipt?.attachments ?? []
                    var blobs: [ServerRules.StoredBlob] = []
                    for a in attachments {
                        blobs.append(ServerRules.StoredBlob(size: try await tx.blobSize(a.sha256),
                                                            proved: try await ServerRules.hasProvedPossession(tx, blob: a.sha256, caller: caller)))
                    }
                    guard let saved = try ledger.admit(record, current: current, blobs: blobs) else { continue }
                    try await tx.saveRecord(zone: zone.visible.id, id: record.id, changeTag: saved.tag, seq: saved.seq,
                                            payload: saved.payload, blobs: attachments.map(\.sha256))
                }
                try await tx.advanceZone(zone.visible.id, seq: ledger.seq, recordBytes: ledger.addedBytes)
                return WirePushResponse(results: ledger.results)
            }
        }
    }

    /// The records of `owner/name` changed after `since` (a token from an earlier answer; nil or
    /// empty for everything), at most `limit`, oldest change first. The zone's sequence is read
    /// before the records, so the token answered never passes a change this answer lacks, whether
    /// or not the database gives one snapshot.
    public func changes(owner: String, name: String, since: String?, limit: Int, caller: Account) async throws -> WireChangesResponse {
        try await transaction(.read) { tx in
            let zone = try await ServerRules.requireZone(tx, owner: owner, name: name, caller: caller)
            let after = try ServerRules.changesStart(since, zone: zone.visible)
            let rows = try await tx.changes(zone: zone.visible.id, after: after, limit: limit + 1)
            let more = rows.count > limit
            var records: [WireRecord] = []
            var last = after
            for row in rows.prefix(limit) {
                records.append(WireRecord(id: row.id, changeTag: row.changeTag, receipt: try ServerRules.receipt(row.payload)))
                last = row.seq
            }
            if !more { last = max(last, zone.seq) }
            return WireChangesResponse(records: records, changeToken: ServerRules.changeToken(zone.visible, last), more: more)
        }
    }
}

extension ServerRules {
    /// True when the server holds the blob and `caller` has shown it holds the bytes: it uploaded
    /// them, or it can already read a zone that references them. Knowing the address is not enough.
    static func hasProvedPossession(_ tx: any StorageTransaction, blob: String, caller: Account) async throws -> Bool {
        if try await tx.holds(account: caller.id, blob: blob) { return true }
        return try await tx.readsZoneReferencing(account: caller.id, blob: blob)
    }

    /// Runs `change` inside the transaction and throws an over-quota refusal, which rolls it back,
    /// when it left any of the accounts over its quota with more bytes than before (`StorageUse.check`).
    /// The accounts' rows are read (and, writing, locked) first, so two processes cannot each see
    /// room for one more upload.
    static func withinQuota<T>(_ tx: any StorageTransaction, accounts: [Int64], _ change: () async throws -> T) async throws -> T {
        var limited: [(id: Int64, name: String, quota: Int64, before: Int64)] = []
        for (id, row) in try await tx.quotas(accounts: Set(accounts).sorted()) {
            guard let quota = row.quota else { continue }
            limited.append((id, row.name, quota, try await tx.usage(account: id).total))
        }
        let result = try await change()
        for account in limited {
            try StorageUse.check(account: account.name, quota: account.quota, before: account.before,
                                 after: try await tx.usage(account: account.id).total)
        }
        return result
    }
}
