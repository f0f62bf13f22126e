/// A receipt's lines and what the finders ask of each line, worked out once per receipt: each finder
/// worked them out again per pass and per label, and that made reading a small receipt ten times the
/// CPU of indexing it (docs/BENCHMARKS.md).
struct ReceiptLines {
    let lines: [String]
    /// Each line's letters in upper case (`TOTAL (RM)` is `TOTALRM`): labels are matched on them.
    let letters: [Letters]
    /// Each line's amounts, left to right.
    let amounts: [[PrintedAmount]]
    /// How strongly each line names the amount paid (`TotalFinder.labelWeight`), nil when it does not.
    let labelWeights: [Double?]

    init(_ lines: [String]) {
        self.lines = lines
        letters = lines.map(Letters.init(lettersOf:))
        amounts = lines.map(AmountScanner.amounts(in:))
        labelWeights = letters.map(TotalFinder.labelWeight)
    }

    var indices: Range<Int> { lines.indices }
}

/// A line's letters (or any text), for the some hundred labels each line is matched against. An
/// ASCII text keeps its bytes and which bytes occur: a label with a first or last byte the text lacks
/// is not looked for, and nearly every label on nearly every line is such.
struct Letters {
    let text: String
    /// The bytes of an ASCII text; nil for any other.
    let bytes: [UInt8]?
    /// A bit for each letter and digit that occurs in `bytes`, and one for all other bytes.
    let present: UInt64

    init(_ text: String) {
        self.init(text: text, bytes: text.isASCIIOnly ? Array(text.utf8) : nil)
    }

    private init(text: String, bytes: [UInt8]?) {
        self.text = text
        self.bytes = bytes
        present = bytes.map(Self.mask) ?? 0
    }

    /// The letters of `line` in upper case (`TOTAL (RM)` is `TOTALRM`), as labels are matched on them.
    init(lettersOf line: String) {
        guard line.isASCIIOnly else {
            self.init(String(line.uppercased().filter { $0.isLetter }))
            return
        }
        let bytes = line.utf8.filter(\.isASCIILetter).map { $0 & 0xDF }
        self.init(text: String(decoding: bytes, as: UTF8.self), bytes: bytes)
    }

    static func bit(_ byte: UInt8) -> UInt64 {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): 1 << UInt64(byte - UInt8(ascii: "A"))
        case UInt8(ascii: "0")...UInt8(ascii: "9"): 1 << UInt64(byte - UInt8(ascii: "0") + 26)
        default: 1 << 63
        }
    }

    static func mask(_ bytes: [UInt8]) -> UInt64 { bytes.reduce(0) { $0 | bit($1) } }

    func includes(_ label: String) -> Bool {
        guard let bytes else { return text.includes(label) }
        return label.utf8.withContiguousStorageIfAvailable { needle in
            guard let first = needle.first, let last = needle.last else { return true }
            guard present & Self.bit(first) != 0, present & Self.bit(last) != 0, bytes.count >= needle.count else { return false }
            return (0...(bytes.count - needle.count)).contains { start in
                bytes[start] == first && (1..<needle.count).allSatisfy { bytes[start + $0] == needle[$0] }
            }
        } ?? text.includesBytes(label)
    }

    func hasPrefix(_ label: String) -> Bool { text.hasPrefix(label) }
    var count: Int { bytes?.count ?? text.count }
}
