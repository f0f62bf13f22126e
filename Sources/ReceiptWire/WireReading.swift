/// A receipt's readings as they travel (protocol revision 6, docs/PROTOCOL.md "Revisions"): what a
/// vault read from the receipt's text and no person has confirmed yet, so every member's vault and
/// the web view can review it. `list`/`show --json` print the same `filled` and `suggestions`.

/// A value proposed from the text but not filled in: not certain enough.
public struct WireSuggestion: Codable, Sendable, Equatable, Hashable {
    public var value: String
    /// 0–1: how sure the reading was.
    public var confidence: Double
    /// The line of the text it came from.
    public var line: String

    public init(value: String, confidence: Double, line: String) {
        self.value = value
        self.confidence = confidence
        self.line = line
    }
}

/// The fields a reading fills or suggests, in every shape a receipt takes (the catalog's row, the
/// wire's content, an edit's metadata): read and set by name in one place.
public protocol ReadableFields {
    var merchant: String? { get set }
    var date: String? { get set }
    var total: String? { get set }
    var currency: String? { get set }
}

extension ReadableFields {
    /// A field a reading fills or suggests, by name (`merchant`, `date`, `total`, `currency`).
    public func value(ofRead name: String) -> String? {
        switch name {
        case "merchant": merchant
        case "date": date
        case "total": total
        case "currency": currency
        default: nil
        }
    }

    /// Sets a field a reading fills or suggests, by name; another name changes nothing.
    public mutating func set(read name: String, to value: String?) {
        switch name {
        case "merchant": merchant = value
        case "date": date = value
        case "total": total = value
        case "currency": currency = value
        default: break
        }
    }
}

extension WireReceipt: ReadableFields {
    /// The fields a reading fills or suggests.
    public static let readFields = ["merchant", "date", "total", "currency"]

    public func isFilled(_ name: String) -> Bool { filled?.contains(name) == true }

    /// Something is left to review: a filled field or a suggestion.
    public var hasReadings: Bool { filled != nil || suggestions != nil }

    /// A person set the fields that differ from `old` (a form, a correction): those are no longer
    /// filled from text, and a suggestion for a field that now has a value is gone.
    public mutating func settleReadings(after old: WireReceipt) {
        for name in Self.readFields where value(ofRead: name) != old.value(ofRead: name) {
            filled?.removeAll { $0 == name }
        }
        suggestions = suggestions?.filter { value(ofRead: $0.key) == nil }
        tidyReadings()
    }

    /// Confirms these filled fields and takes these suggestions (canonical by the one rule of every
    /// door, or the `FieldError` saying why not). Names not in the reading are ignored.
    public mutating func acceptReadings(_ names: [String]) throws {
        for name in names {
            if let suggestion = suggestions?[name], value(ofRead: name) == nil {
                set(read: name, to: try ReceiptFields.read(name, suggestion.value))
            }
            filled?.removeAll { $0 == name }
            suggestions?[name] = nil
        }
        tidyReadings()
    }

    /// The canonical form: `filled` sorted, lines only of filled fields, empty parts absent.
    public mutating func tidyReadings() {
        filled = filled.map { Array(Set($0)).sorted() }
        filledLines = filledLines?.filter { isFilled($0.key) }
        if filled?.isEmpty == true { filled = nil }
        if filledLines?.isEmpty == true { filledLines = nil }
        if suggestions?.isEmpty == true { suggestions = nil }
    }

    /// Why these readings cannot be stored (one sentence), or nil (part of `validationError`).
    func readingError() -> String? {
        func known(_ name: String, _ what: String) -> String? {
            Self.readFields.contains(name) ? nil : "the \(what) field '\(name.prefix(40))' is not one of \(Self.readFields.joined(separator: ", "))"
        }
        func tooLong(_ text: String) -> Bool { text.utf8.count > Self.maxFieldLength || text.utf8.contains(0) }
        if let filled {
            if filled.isEmpty { return "filled is empty: leave it out" }
            for name in filled {
                if let problem = known(name, "filled") { return problem }
                if value(ofRead: name) == nil { return "the filled field \(name) has no value" }
            }
            if filled != Array(Set(filled)).sorted() { return "filled is not sorted without repeats: send \(Array(Set(filled)).sorted())" }
        }
        if let filledLines {
            if filledLines.isEmpty { return "filledLines is empty: leave it out" }
            for (name, line) in filledLines {
                if !isFilled(name) { return "filledLines names \(name.prefix(40)), which is not filled" }
                if tooLong(line) { return "the line of the filled \(name) is longer than \(Self.maxFieldLength) bytes or has a NUL" }
            }
        }
        if let suggestions {
            if suggestions.isEmpty { return "suggestions is empty: leave it out" }
            for (name, s) in suggestions {
                if let problem = known(name, "suggested") { return problem }
                if isFilled(name) || value(ofRead: name) != nil { return "the suggested \(name) already has a value: leave the suggestion out" }
                if s.value.isEmpty || tooLong(s.value) || tooLong(s.line) {
                    return "the suggested \(name) is empty, longer than \(Self.maxFieldLength) bytes or has a NUL"
                }
                if !(0...1).contains(s.confidence) { return "the confidence of the suggested \(name) is not from 0 to 1" }
            }
        }
        return nil
    }
}

extension ReceiptFields {
    /// A field a reading fills or suggests, by its name, in canonical form.
    public static func read(_ name: String, _ text: String) throws -> String {
        switch name {
        case "date": try date(text)
        case "total": try total(text)
        case "currency": try currency(text)
        default: try self.text(text, field: name)
        }
    }
}
