/// A small fingerprint of a receipt's text (MinHash over pairs of adjacent words) that says how alike
/// two texts are without keeping either: a re-scan of the same paper reads a few words differently,
/// so equal texts are too strict, and comparing whole texts would load every text of a vault.
public struct TextSignature: Sendable, Equatable {
    /// How many minimum hashes a signature keeps (4 bytes each): the estimate's error is about
    /// sqrt(J(1-J)/size), 0.04 around the threshold.
    public static let size = 128
    /// The first hashes are cut into bands of `bandRows`: two texts sharing one whole band are
    /// compared. With 32 bands of 2, texts alike at 0.3 meet in a band 95 % of the time, at 0.4 99.6 %.
    static let bandRows = 2
    static let bandCount = 32
    /// Texts whose estimated share of word pairs is at least this are the same paper read twice.
    /// Measured on 12 SROIE dev scans re-scanned (rotated 1.5°, scaled 90 %, blurred, JPEG 70) and read
    /// again by Tesseract: 10 of 12 at 0.31–0.61, the other two unreadable (0.0, 0.08); receipts of
    /// different shops at most 0.20. Receipts of one shop on other days reach 0.87 (a weekly same
    /// purchase): the dates and totals they differ in tell them apart (Vault+Duplicates).
    public static let sameText = 0.28

    public let minima: [UInt32]

    /// nil for a text with no words.
    public init?(text: String) {
        let hashes = Self.asciiShingleHashes(text) ?? Set(Self.shingles(Self.words(text)).map { Self.fnv1a($0.utf8) })
        guard !hashes.isEmpty else { return nil }
        var minima = [UInt32](repeating: .max, count: Self.size)
        for base in hashes {
            for i in 0..<Self.size {
                minima[i] = min(minima[i], UInt32(truncatingIfNeeded: Self.mix(base ^ Self.seeds[i])))
            }
        }
        self.minima = minima
    }

    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.size * 4 else { return nil }
        minima = (0..<Self.size).map { i in
            (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[i * 4 + $1]) << (8 * UInt32($1)) }
        }
    }

    /// Little-endian, as stored.
    public var bytes: [UInt8] { minima.flatMap { m in (0..<4).map { UInt8(truncatingIfNeeded: m >> (8 * UInt32($0))) } } }

    /// The estimated share of word pairs the two texts have in common (Jaccard), 0–1.
    public func similarity(_ other: TextSignature) -> Double {
        Double(zip(minima, other.minima).filter { $0 == $1 }.count) / Double(Self.size)
    }

    /// One key per band, the band's number mixed in so equal hashes in different bands do not meet.
    public var bandKeys: [Int64] {
        (0..<Self.bandCount).map { band in
            var h = Self.mix(UInt64(band) &+ 0x9E37_79B9)
            for row in 0..<Self.bandRows { h = Self.mix(h ^ UInt64(minima[band * Self.bandRows + row])) }
            return Int64(bitPattern: h)
        }
    }

    /// Lowercased words without the punctuation OCR scatters around them.
    static func words(_ text: String) -> [Substring] {
        text.lowercased().split(whereSeparator: \.isWhitespace).compactMap { word in
            let trimmed = word.drop { !$0.isLetter && !$0.isNumber }.reversed().drop { !$0.isLetter && !$0.isNumber }
            return trimmed.isEmpty ? nil : Substring(String(trimmed.reversed()))
        }
    }

    /// The hashes of an ASCII text's shingles, as `fnv1a` of `shingles(words(text))` hashes them, read
    /// off its bytes: making each word and pair a String was most of a small receipt's signature. nil
    /// for any other text (then every byte is one Character, CR LF aside, which is whitespace).
    static func asciiShingleHashes(_ text: String) -> Set<UInt64>? {
        var text = text
        return text.withUTF8 { bytes -> Set<UInt64>? in
            guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
            func isSpace(_ b: UInt8) -> Bool { b == 0x20 || (0x09...0x0D).contains(b) }
            func isWordByte(_ b: UInt8) -> Bool { b.isASCIILetter || b.isASCIIDigit }
            var words: [Range<Int>] = []
            var cursor = 0
            while cursor < bytes.count {
                while cursor < bytes.count, isSpace(bytes[cursor]) { cursor += 1 }
                var start = cursor
                while cursor < bytes.count, !isSpace(bytes[cursor]) { cursor += 1 }
                var end = cursor
                while start < end, !isWordByte(bytes[start]) { start += 1 }
                while end > start, !isWordByte(bytes[end - 1]) { end -= 1 }
                if start < end { words.append(start..<end) }
            }
            func hash(_ range: Range<Int>, from seed: UInt64) -> UInt64 {
                bytes[range].reduce(seed) { ($0 ^ UInt64($1.isASCIILetter ? $1 | 0x20 : $1)) &* fnvPrime }
            }
            guard words.count > 1 else { return Set(words.map { hash($0, from: fnvBasis) }) }
            return Set((1..<words.count).map { i in
                hash(words[i], from: (hash(words[i - 1], from: fnvBasis) ^ 0x20) &* fnvPrime)
            })
        }
    }

    /// Pairs of adjacent words: single words made shop receipts alike by their shared header alone.
    static func shingles(_ words: [Substring]) -> Set<String> {
        guard words.count > 1 else { return Set(words.map(String.init)) }
        return Set((1..<words.count).map { words[$0 - 1] + " " + words[$0] })
    }

    static func fnv1a(_ bytes: String.UTF8View) -> UInt64 {
        bytes.reduce(fnvBasis) { ($0 ^ UInt64($1)) &* fnvPrime }
    }

    static let fnvBasis: UInt64 = 0xcbf2_9ce4_8422_2325
    static let fnvPrime: UInt64 = 0x100_0000_01b3

    /// SplitMix64's finaliser: spreads one hash into independent-looking ones, one per seed.
    static func mix(_ x: UInt64) -> UInt64 {
        var z = x &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Fixed forever: signatures are stored, and a changed seed would make old and new never meet.
    static let seeds: [UInt64] = (0..<UInt64(size)).map { mix($0 &* 0xD1B5_4A32_D192_ED03) }
}
