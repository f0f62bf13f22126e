import BlobStore
import Foundation
import ReceiptWire

/// Push and pull, written once for both stores: what a push may save, what a change token means.
/// A store reads what these need (the record as stored, its attachments' blobs), asks the verdict,
/// and writes what is saved; it decides nothing itself.
extension ServerRules {
    /// What a store knows of a blob an attachment names: its size when it has the row, and whether
    /// the caller proved it holds the bytes (it uploaded them, or already reads a zone that has them).
    struct StoredBlob: Sendable {
        let size: Int64?
        let proved: Bool
    }

    /// A push may carry at most `WireProtocol.maxPushRecords` records (too large otherwise).
    static func checkPushSize(_ request: WirePushRequest) throws {
        guard request.records.count <= WireProtocol.maxPushRecords else {
            throw ServerError(.tooLarge, "a push may carry at most \(WireProtocol.maxPushRecords) records, not \(request.records.count)")
        }
    }

    /// A reader may not push.
    static func requireWriter(_ zone: VisibleZone, caller: Account) throws {
        guard zone.role != .read else {
            throw ServerError(.forbidden, "the account \(caller.name) has read-only access to \(zoneLabel(zone.owner, zone.name)): its changes were refused")
        }
    }

    /// A pushed record with its id as the server keeps it: read as a receipt id (either case) and
    /// written lowercase (RFC 9562), so one receipt is one record whatever the case a client sent. An
    /// id that is no UUID stays as sent, for `pushRefusal` to refuse.
    static func canonical(_ record: WirePushRecord) -> WirePushRecord {
        guard let id = ReceiptID(record.id) else { return record }
        var record = record
        record.id = id.text
        return record
    }

    /// The answer for one pushed record when it may not be saved, nil when it may: an id that is no
    /// UUID, a stale base tag (a conflict carrying the server's version), content that fails
    /// validation, an attachment whose blob the caller has not uploaded (or cannot already read) or
    /// whose size disagrees with the stored one. `blobs` is one per attachment, in order.
    static func pushRefusal(_ record: WirePushRecord, current: StoredRecord?, blobs: [StoredBlob]) throws -> WirePushResult? {
        guard ReceiptID(record.id) != nil else {
            return WirePushResult(id: record.id, status: .rejected, error: "\(record.id) is not a receipt id (a UUID)")
        }
        if let current, current.changeTag != record.baseTag {
            return WirePushResult(id: record.id, status: .conflict,
                                  server: WireRecord(id: record.id, changeTag: current.changeTag, receipt: try receipt(current.payload)))
        }
        guard let receipt = record.receipt else { return nil }
        if let problem = receipt.validationError() {
            return WirePushResult(id: record.id, status: .rejected, error: "receipt \(record.id): \(problem)")
        }
        for (a, blob) in zip(receipt.attachments, blobs) {
            guard let size = blob.size, blob.proved else {
                return WirePushResult(id: record.id, status: .rejected,
                                      error: "receipt \(record.id) references blob \(a.sha256), which must be uploaded first")
            }
            if size != a.size {
                return WirePushResult(id: record.id, status: .rejected,
                                      error: "receipt \(record.id) gives blob \(a.sha256) a size of \(a.size) bytes, not \(size)")
            }
        }
        return nil
    }

    /// One push's account, kept as a store walks its records: the answers, the zone's sequence and
    /// the record bytes the push adds (for the zone's `recordBytes`).
    struct PushLedger {
        var seq: Int64
        var results: [WirePushResult] = []
        var addedBytes: Int64 = 0

        /// What to write for `record`, or nil when it is refused (its answer noted): the new change
        /// tag, the zone's next sequence number and the payload.
        mutating func admit(_ record: WirePushRecord, current: StoredRecord?,
                            blobs: [StoredBlob]) throws -> (tag: String, seq: Int64, payload: String?)? {
            if let refused = try pushRefusal(record, current: current, blobs: blobs) {
                results.append(refused)
                return nil
            }
            seq += 1
            let tag = SecureRandom.hex(8)
            let payload = try ServerRules.payload(record.receipt)
            addedBytes += StorageUse.recordBytes(payload: payload) - (current.map { StorageUse.recordBytes(payload: $0.payload) } ?? 0)
            results.append(WirePushResult(id: record.id, status: .saved, changeTag: tag))
            return (tag, seq, payload)
        }
    }

    /// The stored form of a receipt: JSON with sorted keys (nil for a deletion).
    static func payload(_ receipt: WireReceipt?) throws -> String? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try receipt.map { String(decoding: try encoder.encode($0), as: UTF8.self) }
    }

    static func receipt(_ payload: String?) throws -> WireReceipt? {
        try payload.map { try JSONDecoder().decode(WireReceipt.self, from: Data($0.utf8)) }
    }

    /// The sequence number after which a pull starts: 0 for no token; invalid for a malformed one, gone
    /// for one of an earlier zone of the same name (deleted and made again).
    static func changesStart(_ since: String?, zone: VisibleZone) throws -> Int64 {
        guard let since, !since.isEmpty else { return 0 }
        let parts = since.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let n = Int64(parts[1]), n >= 0 else {
            throw ServerError.bad("the change token \(since) is malformed")
        }
        guard parts[0] == zone.uid else {
            throw ServerError(.gone, "the change token \(since) belongs to an earlier \(zoneLabel(zone.owner, zone.name)): pull again from the start")
        }
        return n
    }

    /// The token a pull answers with: the zone's identity and the last sequence number given.
    static func changeToken(_ zone: VisibleZone, _ seq: Int64) -> String { "\(zone.uid).\(seq)" }
}
