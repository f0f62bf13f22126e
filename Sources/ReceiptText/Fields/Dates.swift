import Foundation

/// Which number comes first in a date printed with two numbers of 12 or less (`03/04/2025`).
public enum DateOrder: String, Sendable, Equatable {
    case dayFirst, monthFirst

    /// The order a locale's people write (`en-US` month first; `de-DE`, `en-GB`, `en-MY`, `fr-FR` day first).
    public init?(locale: String) {
        let parts = locale.split(whereSeparator: { $0 == "-" || $0 == "_" }).map { $0.uppercased() }
        guard let language = parts.first, language.count == 2 || language.count == 3 else { return nil }
        let region = parts.count > 1 ? parts[parts.count - 1] : ""
        self = ["US", "PH", "FM", "MH", "PW", "BZ"].contains(region) ? .monthFirst : .dayFirst
    }
}

/// A calendar day, `YYYY-MM-DD` when printed.
public struct Day: Sendable, Equatable, Hashable, Comparable, CustomStringConvertible {
    public let year: Int, month: Int, day: Int

    public init?(year: Int, month: Int, day: Int) {
        guard (2000...2099).contains(year), (1...12).contains(month), (1...Day.length(month, year)).contains(day) else { return nil }
        self.year = year
        self.month = month
        self.day = day
    }

    public var description: String {
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(year)-\(two(month))-\(two(day))"
    }

    public static func < (a: Day, b: Day) -> Bool { (a.year, a.month, a.day) < (b.year, b.month, b.day) }

    /// Today in UTC.
    public static var today: Day {
        let days = Int(Date().timeIntervalSince1970 / 86_400)
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let z = days + 719_468, era = (z >= 0 ? z : z - 146_096) / 146_097, doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365, doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153, d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9
        return Day(year: yoe + era * 400 + (m <= 2 ? 1 : 0), month: m, day: d) ?? Day(year: 2099, month: 12, day: 31)!
    }

    static func length(_ month: Int, _ year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}

/// One date printed in a line, as each order reads it: a date whose print settles its order (a year
/// first, a month's name, a number over 12) has one reading; `03/04/2025` has two.
public struct PrintedDate: Sendable, Equatable {
    public var dayFirst: Day?
    public var monthFirst: Day?

    /// The day, when the print alone settles it.
    public var settled: Day? {
        switch (dayFirst, monthFirst) {
        case let (a?, b?): return a == b ? a : nil
        case let (a?, nil): return a
        case let (nil, b?): return b
        default: return nil
        }
    }

    /// The order this print proves, if it proves one (`28/12/2017` proves day first).
    public var provenOrder: DateOrder? {
        guard numeric, settled != nil else { return nil }
        if dayFirst != nil, monthFirst == nil { return .dayFirst }
        if monthFirst != nil, dayFirst == nil { return .monthFirst }
        return nil
    }

    /// Two numbers and a year, in an order the print does not say (not year first, no month name).
    var numeric = false

    public func reading(_ order: DateOrder) -> Day? {
        settled ?? (order == .dayFirst ? dayFirst : monthFirst)
    }
}

/// Finds dates printed in a line: `25/12/2018`, `12-01-19`, `2017-12-28`, `2018/03/05`, `06.03.2018`,
/// `05 MAR 2018`, `14-Mar-18`, `05/MAR/2018`, `Jan 12, 2019`, `12. März 2024`, `12 OGOS 2018`.
public enum DateScanner {
    enum Token: Equatable {
        case number(String), word(String), separator(Character), space
    }

    public static func dates(in line: String) -> [PrintedDate] {
        // Every date prints a digit: a line without one (half a receipt's) is not tokenized.
        guard line.utf8.contains(where: \.isASCIIDigit) else { return [] }
        let tokens = tokenize(zeroesRead(line.uppercased()))
        var found: [PrintedDate] = []
        var index = 0
        while index < tokens.count {
            if let (date, used) = match(tokens, at: index) {
                found.append(date)
                index += used
            } else {
                index += 1
            }
        }
        return found
    }

    /// OCR now and then reads a date's 0 as the letter O (`Date:O9/02/17`, SROIE dev 095 and 279): in a
    /// word shaped as a numeric date (three parts of digits or O, 1-2, 1-2 and 2-4 long, the same
    /// separator twice, four digits at least) an O is a 0. Any other word is left as it is, and a text
    /// with no such word is returned as it came.
    static func zeroesRead(_ text: String) -> String {
        guard text.utf8.contains(UInt8(ascii: "O")) else { return text }
        if text.isASCIIOnly {
            // Each byte is a Character: the words are found, and their O made 0, in place.
            var bytes = Array(text.utf8)
            var changed = false
            var start = 0
            for end in 0...bytes.count where end == bytes.count || !isDateWordByte(bytes[end]) {
                if isDateShaped(bytes[start..<end]) {
                    for i in start..<end where bytes[i] == UInt8(ascii: "O") { bytes[i] = UInt8(ascii: "0") }
                    changed = true
                }
                start = end + 1
            }
            return changed ? String(decoding: bytes, as: UTF8.self) : text
        }
        var out: String?
        var copied = text.startIndex
        var wordStart = text.startIndex
        var index = text.startIndex
        while index <= text.endIndex {
            let next = index == text.endIndex ? index : text.index(after: index)
            // A word's Characters are ASCII, one byte each.
            if index < text.endIndex, let byte = text[index].asciiValue, isDateWordByte(byte) {
                index = next
                continue
            }
            if isDateShaped(ArraySlice(text[wordStart..<index].utf8)) {
                out = (out ?? "") + text[copied..<wordStart] + text[wordStart..<index].replacingOccurrences(of: "O", with: "0")
                copied = index
            }
            if index == text.endIndex { break }
            wordStart = next
            index = next
        }
        guard let out else { return text }
        return out + text[copied...]
    }

    static func isDateWordByte(_ byte: UInt8) -> Bool {
        byte.isASCIILetter || byte.isASCIIDigit || byte == UInt8(ascii: "/") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
    }

    /// Three parts of digits or O, 1-2, 1-2 and 2-4 long, the same separator twice, an O and four digits at least.
    static func isDateShaped(_ word: ArraySlice<UInt8>) -> Bool {
        guard word.contains(UInt8(ascii: "O")), word.count(where: \.isASCIIDigit) >= 4 else { return false }
        func isSeparator(_ byte: UInt8) -> Bool { byte == UInt8(ascii: "/") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") }
        let separators = word.filter(isSeparator)
        let parts = word.split(omittingEmptySubsequences: false, whereSeparator: isSeparator)
        return separators.count == 2 && Set(separators).count == 1 && parts.count == 3
            && zip(parts, [1...2, 1...2, 2...4]).allSatisfy { part, lengths in
                lengths.contains(part.count) && part.allSatisfy { $0 == UInt8(ascii: "O") || $0.isASCIIDigit }
            }
    }

    static func tokenize(_ text: String) -> [Token] {
        if text.isASCIIOnly { return tokenize(ascii: Array(text.utf8)) }
        var tokens: [Token] = []
        var current = ""
        var currentIsNumber = false
        func flush() {
            guard !current.isEmpty else { return }
            tokens.append(currentIsNumber ? .number(current) : .word(current))
            current = ""
        }
        for c in text {
            if c.isDigitASCII || c.isLetterFast {
                let isNumber = c.isDigitASCII
                if !current.isEmpty, isNumber != currentIsNumber { flush() }
                currentIsNumber = isNumber
                current.append(c)
            } else {
                flush()
                if c.isWhitespaceFast {
                    if tokens.last != .space { tokens.append(.space) }
                } else {
                    tokens.append(.separator(c))
                }
            }
        }
        flush()
        return tokens
    }

    /// `tokenize` of an ASCII text, from its bytes: each is one Character (but CR LF, whitespace either
    /// way), and taking a line's bytes as Characters was the most of reading its dates.
    static func tokenize(ascii bytes: [UInt8]) -> [Token] {
        var tokens: [Token] = []
        var start = 0
        func flush(upTo end: Int) {
            guard start < end else { return }
            let run = String(decoding: bytes[start..<end], as: UTF8.self)
            tokens.append(bytes[start].isASCIIDigit ? .number(run) : .word(run))
        }
        for (index, byte) in bytes.enumerated() {
            if byte.isASCIIDigit || byte.isASCIILetter {
                if index > start, byte.isASCIIDigit != bytes[start].isASCIIDigit {
                    flush(upTo: index)
                    start = index
                }
                continue
            }
            flush(upTo: index)
            start = index + 1
            if byte == 0x20 || (0x09...0x0D).contains(byte) {
                if tokens.last != .space { tokens.append(.space) }
            } else {
                tokens.append(.separator(Character(Unicode.Scalar(byte))))
            }
        }
        flush(upTo: bytes.count)
        return tokens
    }

    /// A date starting at `tokens[start]` and how many tokens it spans.
    static func match(_ tokens: [Token], at start: Int) -> (PrintedDate, Int)? {
        guard case .number(let first) = tokens[start] else {
            if case .word(let word) = tokens[start], let month = month(word) { return monthNameFirst(tokens, start, month) }
            return nil
        }
        // A number glued to other digits by a separator before it is part of something else (a code, a range).
        if start >= 2, case .separator = tokens[start - 1], case .number = tokens[start - 2] { return nil }
        // Letters glued to the first number make it a code (`HC03-7`, `RC11-23-42`).
        if start >= 1, case .word = tokens[start - 1] { return nil }
        var cursor = start + 1
        guard let (second, separator) = part(tokens, &cursor, separators: "-/.") ?? monthPart(tokens, &cursor) else { return nil }
        let third: Part
        if case .word = second.token {
            guard skip(tokens, &cursor, "-/., "), cursor < tokens.count else { return nil }
            third = Part(token: tokens[cursor])
            cursor += 1
        } else {
            guard let (part, _) = part(tokens, &cursor, separators: String(separator)) else { return nil }
            third = part
            // Digits glued on by the same separator: a longer code, not a date.
            if cursor + 1 < tokens.count, case .separator(let s) = tokens[cursor], s == separator,
               case .number = tokens[cursor + 1] { return nil }
        }
        guard case .number(let last) = third.token else { return nil }
        // `12.17.26 PM` is a time of day.
        if cursor + 1 < tokens.count, tokens[cursor] == .space, case .word(let w) = tokens[cursor + 1], w == "AM" || w == "PM" {
            return nil
        }
        let date: PrintedDate
        switch (first.count, second.token, last.count) {
        case (4, .number(let m), 1...2):
            date = PrintedDate(dayFirst: day(first, m, last, yearFirst: true), monthFirst: nil)
        case (1...2, .number(let b), 2), (1...2, .number(let b), 4):
            var d = PrintedDate(dayFirst: day(last, b, first), monthFirst: day(last, first, b))
            d.numeric = true
            date = d
        case (1...2, .word(let name), 2), (1...2, .word(let name), 4):
            guard let m = month(name) else { return nil }
            date = PrintedDate(dayFirst: day(last, String(m), first), monthFirst: nil)
        default:
            return nil
        }
        guard date.dayFirst != nil || date.monthFirst != nil else { return nil }
        return (date, cursor - start)
    }

    /// `Jan 12, 2019`, `MARCH 5 2024`.
    static func monthNameFirst(_ tokens: [Token], _ start: Int, _ month: Int) -> (PrintedDate, Int)? {
        var cursor = start + 1
        guard skip(tokens, &cursor, ".- "), cursor < tokens.count, case .number(let d) = tokens[cursor], d.count <= 2 else { return nil }
        cursor += 1
        guard skip(tokens, &cursor, ",. "), cursor < tokens.count, case .number(let y) = tokens[cursor], y.count == 4 else { return nil }
        guard let date = day(y, String(month), d) else { return nil }
        return (PrintedDate(dayFirst: date, monthFirst: date), cursor + 1 - start)
    }

    struct Part { let token: Token }

    /// Optional spaces, one separator out of `separators`, optional spaces, then a number or word.
    static func part(_ tokens: [Token], _ cursor: inout Int, separators: String) -> (Part, Character)? {
        var c = cursor
        while c < tokens.count, tokens[c] == .space { c += 1 }
        guard c < tokens.count, case .separator(let s) = tokens[c], separators.contains(s) else { return nil }
        c += 1
        while c < tokens.count, tokens[c] == .space { c += 1 }
        guard c < tokens.count else { return nil }
        switch tokens[c] {
        case .number, .word:
            cursor = c + 1
            return (Part(token: tokens[c]), s)
        default:
            return nil
        }
    }

    /// `05 MAR 2018` and `12. März 2024`: a month's name after the day with spaces or a dot only.
    static func monthPart(_ tokens: [Token], _ cursor: inout Int) -> (Part, Character)? {
        var c = cursor
        guard skip(tokens, &c, ". "), c < tokens.count, case .word(let name) = tokens[c], month(name) != nil else { return nil }
        c += 1
        var after = c
        guard skip(tokens, &after, " "), after < tokens.count, case .number = tokens[after] else { return nil }
        cursor = c
        // The year follows after spaces only: present it as if a separator stood there.
        return (Part(token: .word(name)), " ")
    }

    static func skip(_ tokens: [Token], _ cursor: inout Int, _ allowed: String) -> Bool {
        while cursor < tokens.count {
            switch tokens[cursor] {
            case .space where allowed.contains(" "): cursor += 1
            case .separator(let s) where allowed.contains(s): cursor += 1
            default: return true
            }
        }
        return true
    }

    static func day(_ year: String, _ month: String, _ day: String, yearFirst: Bool = false) -> Day? {
        guard let y = Int(year), let m = Int(month), let d = Int(day) else { return nil }
        if yearFirst { return Day(year: Int(year) ?? 0, month: m, day: d) }
        return Day(year: year.count == 2 ? 2000 + y : y, month: m, day: d)
    }

    static let months: [String: Int] = {
        var table: [String: Int] = [:]
        let names: [[String]] = [
            ["JAN", "JANUARY", "JANUAR", "JÄN", "JÄNNER", "JANV", "JANVIER", "ENE", "ENERO", "GEN"],
            ["FEB", "FEBRUARY", "FEBRUAR", "FÉV", "FEV", "FÉVR", "FEVR", "FÉVRIER", "FEVRIER"],
            ["MAR", "MARCH", "MÄR", "MÄRZ", "MARZ", "MARS", "MAC"],
            ["APR", "APRIL", "AVR", "AVRIL", "ABR"],
            ["MAY", "MAI", "MEI", "MAG"],
            ["JUN", "JUNE", "JUNI", "JUIN"],
            ["JUL", "JULY", "JULI", "JUIL", "JUILLET"],
            ["AUG", "AUGUST", "AOÛT", "AOUT", "OGOS", "AGO"],
            ["SEP", "SEPT", "SEPTEMBER", "SEPTEMBRE"],
            ["OCT", "OCTOBER", "OKT", "OKTOBER", "OCTOBRE"],
            ["NOV", "NOVEMBER", "NOVEMBRE"],
            ["DEC", "DECEMBER", "DEZ", "DEZEMBER", "DÉC", "DÉCEMBRE", "DECEMBRE", "DIS", "DIC"],
        ]
        for (index, group) in names.enumerated() { for name in group { table[name] = index + 1 } }
        return table
    }()

    static func month(_ word: String) -> Int? { months[word] }
}
