import ReceiptWire

/// The 3-way merge of a receipt changed on both sides (docs/PROTOCOL.md, "Conflicts").
///
/// `base` is the version both sides last agreed on (nil: none, or a deletion), `local` and `server`
/// the two current versions (nil: deleted). The rule, applied field by field:
/// - a field changed on one side only takes that side's value;
/// - a field changed on both sides to different values takes the value of the side whose
///   `modifiedAt` is later; on a tie, the greater value (nil is the least);
/// - tags and attachments merge as sets: an element is kept unless one side removed it, and added
///   when either side added it (order: local's, then the server's additions); an attachment kept
///   on both sides whose name or media type changed follows the field rule;
/// - edit against delete: the edit wins (the receipt is kept, with the edited content); a delete
///   against an unchanged receipt wins.
/// The rule is a function of the three versions only, so whichever vault merges, the result is the
/// same, and once pushed it is what every other vault pulls.
public enum ReceiptMerge {
    public static func merge(base: WireReceipt?, local: WireReceipt?, server: WireReceipt?) -> WireReceipt? {
        switch (local, server) {
        case (nil, nil):
            return nil
        case (let l?, nil):
            // Deleted on the server: kept only when edited locally since the base.
            if let base, sameContent(l, base) { return nil }
            return l
        case (nil, let s?):
            if let base, sameContent(s, base) { return nil }
            return s
        case (let l?, let s?):
            if sameContent(l, s) { return l.modifiedAt >= s.modifiedAt ? l : s }
            return mergeFields(base: base, local: l, server: s)
        }
    }

    /// Equal in everything a user can see or edit (timestamps aside).
    public static func sameContent(_ a: WireReceipt, _ b: WireReceipt) -> Bool {
        var x = a
        x.modifiedAt = b.modifiedAt
        x.createdAt = b.createdAt
        return x == b
    }

    static func mergeFields(base: WireReceipt?, local l: WireReceipt, server s: WireReceipt) -> WireReceipt {
        let localWins = l.modifiedAt != s.modifiedAt ? l.modifiedAt > s.modifiedAt : nil as Bool?
        func pick<T: Equatable>(_ b: T?, _ lv: T, _ sv: T, greater: (T, T) -> Bool) -> T {
            if lv == sv { return lv }
            if let b, lv == b { return sv }
            if let b, sv == b { return lv }
            if let localWins { return localWins ? lv : sv }
            return greater(lv, sv) ? lv : sv
        }
        func text(_ k: KeyPath<WireReceipt, String?>) -> String? {
            pick(base.map { $0[keyPath: k] }, l[keyPath: k], s[keyPath: k]) { a, b in (a ?? "") > (b ?? "") || (b == nil && a != nil) }
        }
        var m = l
        m.merchant = text(\.merchant)
        m.date = text(\.date)
        m.total = text(\.total)
        m.currency = text(\.currency)
        m.category = text(\.category)
        m.note = text(\.note)
        m.status = text(\.status)
        m.claim = text(\.claim)
        m.reimbursedOn = text(\.reimbursedOn)
        m.tags = mergeSets(base: base?.tags, local: l.tags, server: s.tags, key: { $0 }, combine: { a, _, _ in a })
        m.attachments = mergeSets(base: base?.attachments, local: l.attachments, server: s.attachments, key: \.sha256) { a, b, old in
            var r = a
            r.filename = pick(old?.filename, a.filename, b.filename, greater: >)
            r.mediaType = pick(old?.mediaType, a.mediaType, b.mediaType, greater: >)
            return r
        }
        m.createdAt = min(l.createdAt, s.createdAt)
        m.modifiedAt = max(l.modifiedAt, s.modifiedAt)
        return m
    }

    static func mergeSets<T, K: Hashable>(base: [T]?, local: [T], server: [T], key: (T) -> K,
                                         combine: (T, T, T?) -> T) -> [T] {
        let baseByKey = Dictionary((base ?? []).map { (key($0), $0) }, uniquingKeysWith: { a, _ in a })
        let serverByKey = Dictionary(server.map { (key($0), $0) }, uniquingKeysWith: { a, _ in a })
        let localKeys = Set(local.map(key))
        var out: [T] = []
        var seen = Set<K>()
        for item in local {
            let k = key(item)
            guard seen.insert(k).inserted else { continue }
            if let other = serverByKey[k] {
                out.append(combine(item, other, baseByKey[k]))
            } else if baseByKey[k] == nil {
                out.append(item) // added locally
            } // else: removed on the server
        }
        for item in server {
            let k = key(item)
            guard !localKeys.contains(k), seen.insert(k).inserted else { continue }
            if baseByKey[k] == nil { out.append(item) } // added on the server; else removed locally
        }
        return out
    }
}
