import Foundation

/// Storage quotas (docs/PROTOCOL.md, "Quotas"). What an account stores counts against it, in three parts:
/// - blobs: as CloudKit counts shared data against the zone's owner, the bytes of every blob a record
///   of an owner's zones references count against the owner, once per blob however many records
///   reference it; a blob an account uploaded counts against the uploader unless a zone the uploader
///   can read references it (never "unless any zone does": whether other households hold some bytes
///   must not change the answer to an upload);
/// - texts: every extracted text kept for the owner (its bytes, or its failure reason's);
/// - records: each record of the owner's zones, its JSON as stored plus a row's worth, so that
///   deletion markers count too.
/// The rules both stores apply are here once; each store sums them in its own SQL.
public struct StorageUse: Sendable, Equatable {
    public var blobs: Int64 = 0
    public var texts: Int64 = 0
    public var records: Int64 = 0
    public var total: Int64 { blobs + texts + records }

    /// What a record row costs beside its JSON: its id, change tag and sequence number.
    static let recordRowBytes: Int64 = 64

    static func recordBytes(payload: String?) -> Int64 { recordRowBytes + Int64(payload?.utf8.count ?? 0) }

    /// A text's bytes: the text, or the failure reason when the extractor failed.
    static func textBytes(text: String?, failure: String?) -> Int64 { Int64((text ?? failure ?? "").utf8.count) }

    /// Throws an over-quota refusal when a change took the account past its quota with more bytes than before: a change
    /// that frees room, or adds nothing new, always passes, so an account over a lowered quota can
    /// still clean up.
    static func check(account name: String, quota: Int64?, before: Int64, after: Int64) throws {
        guard let quota, after > quota, after > before else { return }
        throw ServerError(.overQuota, "the storage quota of the account \(name) (\(quota) bytes) would be exceeded: "
            + "it uses \(before) bytes and this needs \(after - before) more; the change was not kept "
            + "(the server's administrator can raise it with `receipt server account-quota \(name) SIZE`)")
    }
}

/// Sizes as a person writes them: `0`, `500000`, `750KB`, `10MB`, `2GiB`, `1TB` (decimal and binary
/// units), or `none` for no limit (nil).
public enum ByteSize {
    public static func parse(_ text: String) -> Int64?? {
        let t = text.trimmingCharacters(in: .whitespaces)
        if t.lowercased() == "none" || t.lowercased() == "unlimited" { return .some(nil) }
        let units: [(String, Int64)] = [
            ("kib", 1 << 10), ("mib", 1 << 20), ("gib", 1 << 30), ("tib", 1 << 40),
            ("kb", 1_000), ("mb", 1_000_000), ("gb", 1_000_000_000), ("tb", 1_000_000_000_000),
            ("k", 1_000), ("m", 1_000_000), ("g", 1_000_000_000), ("t", 1_000_000_000_000), ("b", 1),
        ]
        var digits = Substring(t.lowercased())
        var unit: Int64 = 1
        for (suffix, factor) in units where digits.hasSuffix(suffix) {
            unit = factor
            digits = digits.dropLast(suffix.count)
            break
        }
        digits = Substring(digits.trimmingCharacters(in: .whitespaces))
        guard !digits.isEmpty, digits.count <= 15, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int64(digits) else {
            return nil
        }
        let (bytes, overflow) = n.multipliedReportingOverflow(by: unit)
        return overflow ? nil : .some(bytes)
    }
}
