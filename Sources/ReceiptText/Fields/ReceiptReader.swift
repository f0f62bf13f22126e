/// A field of a receipt that its text can tell.
public enum ReadField: String, Sendable, CaseIterable, Codable {
    case merchant, date, total, currency, tax
}

/// What the text says of one field: its value in the form `receipt` stores it (a date `YYYY-MM-DD`, a
/// total `12.30`, a currency `EUR`), how sure the text makes it (0–1) and the line it came from.
public struct FieldProposal: Sendable, Equatable {
    public var field: ReadField
    public var value: String
    public var confidence: Double
    public var line: String

    /// Confident enough to fill the field (a wrong filled value is worse than a blank one).
    public var fills: Bool { confidence >= ReceiptReader.fillThreshold }
}

/// Reads a receipt's fields from its extracted text. Pure: the same text, order and aliases give the
/// same proposals.
public struct ReceiptReader: Sendable {
    public static let fillThreshold = 0.9

    /// The vault's date order for a date the receipt itself leaves open (`03/04/2025`), if it has one.
    public var order: DateOrder?
    /// Header lines the household renamed (keyed by `ReceiptReader.aliasKey`) and the name they gave.
    public var merchantAliases: [String: String]

    /// The last day a receipt can be of (the day it is read): a later date printed on it is something
    /// else (a warranty's end, a code).
    public var latest: Day

    public init(order: DateOrder? = nil, merchantAliases: [String: String] = [:], latest: Day = .today) {
        self.order = order
        self.latest = latest
        self.merchantAliases = merchantAliases
    }

    /// How a header line is keyed in `merchantAliases`.
    public static func aliasKey(_ line: String) -> String { MerchantFinder.normalized(line) }

    public func read(_ text: String) -> [FieldProposal] {
        let lines = Self.lines(text)
        var proposals: [FieldProposal] = []
        if let merchant = MerchantFinder.find(lines: lines, aliases: merchantAliases) {
            proposals.append(FieldProposal(field: .merchant, value: merchant.name, confidence: merchant.confidence, line: merchant.line))
        }
        let text = ReceiptLines(lines)
        let total = TotalFinder.find(text)
        if let total {
            proposals.append(FieldProposal(field: .total, value: total.amount.decimal, confidence: total.confidence, line: total.line))
        }
        let currency = Self.currency(text, total: total?.amount, order: order)
        if let currency { proposals.append(currency) }
        if let date = Self.date(lines: lines, currency: currency?.value, order: order, latest: latest) { proposals.append(date) }
        if let tax = TotalFinder.tax(text) {
            // A tax is only ever offered: its line names a rate as often as an amount.
            proposals.append(FieldProposal(field: .tax, value: tax.amount.decimal, confidence: 0.6, line: tax.line))
        }
        return proposals
    }

    /// The text's lines, without the spaces and tabs at their ends, empty lines left out. An ASCII
    /// text's from its bytes (the newlines of ASCII are LF, VT, FF, CR), as its Characters give them.
    static func lines(_ text: String) -> [String] {
        guard text.isASCIIOnly else {
            return text.split(whereSeparator: \.isNewline).map { String($0).trimming([" ", "\t"]) }.filter { !$0.isEmpty }
        }
        func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        return Array(text.utf8).split(whereSeparator: { (0x0A...0x0D).contains($0) }).compactMap { line in
            guard let first = line.firstIndex(where: { !isBlank($0) }), let last = line.lastIndex(where: { !isBlank($0) }) else { return nil }
            return String(decoding: line[first...last], as: UTF8.self)
        }
    }

    /// The currency named beside the total, else the one code or symbol the whole text names.
    static func currency(_ text: ReceiptLines, total: PrintedAmount?, order: DateOrder?) -> FieldProposal? {
        let lines = zip(text.lines, text.amounts)
        if let code = total?.currency, let (line, _) = lines.first(where: { $0.1.contains { $0.currency == code } }) {
            return FieldProposal(field: .currency, value: code, confidence: 0.95, line: line)
        }
        let named = lines.flatMap { line, amounts in amounts.compactMap { $0.currency }.map { ($0, line) } }
        let codes = Set(named.map(\.0))
        if codes.count == 1, let (code, line) = named.first {
            return FieldProposal(field: .currency, value: code, confidence: 0.9, line: line)
        }
        if codes.isEmpty, let (line, _) = lines.first(where: { $0.1.contains(where: \.dollarSign) }) {
            // `$` is several countries' sign: the vault's locale says which, else it is only offered.
            return FieldProposal(field: .currency, value: "USD", confidence: order == .monthFirst ? 0.9 : 0.5, line: line)
        }
        return nil
    }

    /// The receipt's date: the one the text prints (on a line labelled as the date when it prints several),
    /// read in the order the receipt proves, else its currency's country's, else the vault's.
    static func date(lines: [String], currency: String?, order: DateOrder?, latest: Day) -> FieldProposal? {
        let found = lines.flatMap { line in DateScanner.dates(in: line).map { (date: $0, line: line) } }
        guard !found.isEmpty else { return nil }
        // A date readable only after today proves no order: it is something else (`12.17.26 PM` is a time).
        let proven = Set(found.compactMap { entry in entry.date.settled.flatMap { $0 > latest ? nil : entry.date.provenOrder } })
        let receiptOrder: DateOrder? = proven.count == 1 ? proven.first : nil
        let currencyOrder: DateOrder? = currency.flatMap { ["USD"].contains($0) ? nil : .dayFirst }
        let chosen = receiptOrder ?? currencyOrder ?? order
        let read = found.compactMap { entry -> (day: Day, line: String, settledByPrint: Bool)? in
            if let day = entry.date.settled { return day > latest ? nil : (day, entry.line, true) }
            guard let chosen, let day = entry.date.reading(chosen), !(day > latest) else { return nil }
            return (day, entry.line, false)
        }
        // The receipt's own date sits on a line labelled DATE or beside a time; a code that looks like a
        // date (`CK 11-22-31`) has neither, nor does a warranty's or a return's end.
        let scored = read.map { entry in (entry: entry, score: (isDateLine(entry.line) ? 2 : 0) + (hasTime(entry.line) ? 2 : 0)) }
        let top = scored.map(\.score).max() ?? 0
        let best = Set(scored.filter { $0.score == top }.map(\.entry.day))
        let rest = Set(scored.filter { $0.score < top }.map(\.entry.day)).subtracting(best)
        guard let pick = scored.first(where: { $0.score == top })?.entry else {
            // The order is open and nothing settles it: offer the reading most of the world uses.
            guard let first = found.first, let day = first.date.dayFirst ?? first.date.monthFirst else { return nil }
            return FieldProposal(field: .date, value: day.description, confidence: 0.4, line: first.line)
        }
        var confidence: Double
        if best.count == 1, rest.isEmpty {
            confidence = 0.95
        } else if best.count == 1, top >= 2 {
            confidence = 0.9
        } else {
            confidence = 0.6
        }
        if !pick.settledByPrint {
            if receiptOrder == nil, currencyOrder == nil { confidence = min(confidence, 0.9) }
            if !proven.isEmpty, receiptOrder == nil { confidence = min(confidence, 0.5) }
        }
        return FieldProposal(field: .date, value: pick.day.description, confidence: confidence, line: pick.line)
    }

    /// `21:13`, `8:13 PM`, `15:41:52`: a time of day printed on the line.
    static func hasTime(_ line: String) -> Bool {
        let chars = Array(line)
        return chars.indices.contains { i in
            chars[i] == ":" && i > 0 && chars[i - 1].isNumberFast && i + 2 < chars.count && chars[i + 1].isNumberFast && chars[i + 2].isNumberFast
        }
    }

    static func isDateLine(_ line: String) -> Bool {
        let letters = TotalFinder.lettersOnly(line)
        return ["DATE", "DATUM", "TARIKH", "FECHA", "DATA"].contains { letters.includes($0) }
    }
}
