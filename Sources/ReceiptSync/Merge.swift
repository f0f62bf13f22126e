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
/// - readings (revision 6): a value a person typed beats one filled from text on the other side;
///   `filled` and `suggestions` merge as sets of field names (an accept on one side removes one),
///   then keep only what still describes the merged values;
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
        func text(_ b: String??, _ lv: String?, _ sv: String?) -> String? {
            pick(b, lv, sv) { a, b in (a ?? "") > (b ?? "") || (b == nil && a != nil) }
        }
        func text(_ k: KeyPath<WireReceipt, String?>) -> String? { text(base.map { $0[keyPath: k] }, l[keyPath: k], s[keyPath: k]) }
        var m = l
        for name in WireReceipt.readFields {
            let lv = l.value(ofRead: name), sv = s.value(ofRead: name)
            // A value a person typed is never replaced by one another device filled from text.
            if lv != sv, l.isFilled(name) != s.isFilled(name), let typed = l.isFilled(name) ? sv : lv {
                m.set(read: name, to: typed)
            } else {
                m.set(read: name, to: text(base.map { $0.value(ofRead: name) }, lv, sv))
            }
        }
        mergeReadings(base: base, local: l, server: s, into: &m) { b, lv, sv in pick(b, lv, sv) { $0.value > $1.value } }
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

    /// `filled` and `suggestions` of the merge `m` (whose values are already merged): a field stays
    /// filled where a side filled it with the merged value; a suggestion stays for a field still blank.
    static func mergeReadings(base: WireReceipt?, local l: WireReceipt, server s: WireReceipt, into m: inout WireReceipt,
                              pick: (WireSuggestion?, WireSuggestion, WireSuggestion) -> WireSuggestion) {
        let filled = mergeSets(base: base?.filled ?? [], local: l.filled ?? [], server: s.filled ?? [], key: { $0 }) { a, _, _ in a }
        let fillers = [l, s]
        m.filled = filled.filter { name in fillers.contains { $0.isFilled(name) && $0.value(ofRead: name) == m.value(ofRead: name) } }
        m.filledLines = Dictionary(uniqueKeysWithValues: (m.filled ?? []).compactMap { name in
            fillers.first { $0.isFilled(name) && $0.value(ofRead: name) == m.value(ofRead: name) }?.filledLines?[name].map { (name, $0) }
        })
        func pairs(_ r: WireReceipt?) -> [(String, WireSuggestion)] { (r?.suggestions ?? [:]).sorted { $0.key < $1.key } }
        let suggested = mergeSets(base: pairs(base), local: pairs(l), server: pairs(s), key: \.0) { a, b, old in (a.0, pick(old?.1, a.1, b.1)) }
        m.suggestions = Dictionary(suggested.filter { m.value(ofRead: $0.0) == nil && !m.isFilled($0.0) }, uniquingKeysWith: { a, _ in a })
        m.tidyReadings()
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
