/// The reader's character tests without Unicode's property tables for ASCII, where they answer the
/// same: `Character.isLetter` and `isNumber` look every character up in the tables, and that was a
/// fifth of `receipt index`'s CPU on plain-text receipts (docs/BENCHMARKS.md). Any other character is
/// asked as before. (`asciiValue` of the one two-scalar ASCII character, CR LF, is LF: neither a
/// letter nor a digit, and whitespace either way.)
extension Character {
    var isLetterFast: Bool {
        guard let byte = asciiValue else { return isLetter }
        return byte.isASCIILetter
    }

    /// A digit 0–9: what `isASCII && isNumber` says.
    var isDigitASCII: Bool { asciiValue?.isASCIIDigit ?? false }

    var isNumberFast: Bool {
        guard let byte = asciiValue else { return isNumber }
        return byte.isASCIIDigit
    }

    var isWhitespaceFast: Bool {
        guard let byte = asciiValue else { return isWhitespace }
        return byte == 0x20 || (0x09...0x0D).contains(byte)
    }
}

extension UInt8 {
    var isASCIILetter: Bool { (self | 0x20) >= UInt8(ascii: "a") && (self | 0x20) <= UInt8(ascii: "z") }
    var isASCIIDigit: Bool { self >= UInt8(ascii: "0") && self <= UInt8(ascii: "9") }
}

extension String {
    /// Whether every byte is ASCII: then each byte is one Character (CR LF aside), and upper case,
    /// letters and digits are the bytes'.
    var isASCIIOnly: Bool {
        var copy = self
        return copy.withUTF8 { $0.allSatisfy { $0 < 0x80 } }
    }

    /// Whether `label` occurs in this string as strings compare (canonical equivalence: a decomposed Ü
    /// is Ü). Foundation's `contains`, which every file of this module sees because Dates.swift imports
    /// Foundation, bridges both strings to NSString on each call and was a third of `receipt index`'s
    /// CPU (docs/BENCHMARKS.md). A line of ASCII letters, nearly every line, is one byte a Character,
    /// so a byte search answers the same; any other line is compared Character by Character.
    func includes(_ label: String) -> Bool {
        if isASCIIOnly { return includesBytes(label) }
        guard let first = label.first else { return true }
        var start = startIndex
        while let found = self[start...].firstIndex(of: first) {
            if self[found...].starts(with: label) { return true }
            start = index(after: found)
        }
        return false
    }

    /// The byte search of `includes`, for a string known to be ASCII.
    func includesBytes(_ label: String) -> Bool {
        label.isEmpty || firstByteRange(of: label) != nil
    }

    /// Where `word` first occurs in this ASCII string, as byte offsets; nil when it does not (or is empty).
    func firstByteRange(of word: String) -> Range<Int>? {
        var haystack = self, needle = word
        return haystack.withUTF8 { h -> Range<Int>? in
            needle.withUTF8 { n -> Range<Int>? in
                guard let first = n.first, h.count >= n.count else { return nil }
                var start = 0
                while start <= h.count - n.count {
                    if h[start] == first, (1..<n.count).allSatisfy({ h[start + $0] == n[$0] }) { return start..<(start + n.count) }
                    start += 1
                }
                return nil
            }
        }
    }
}
