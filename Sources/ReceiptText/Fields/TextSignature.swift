/// A small fingerprint of a receipt's text (MinHash over pairs of adjacent words) that says how alike
/// two texts are without keeping either: a re-scan of the same paper reads a few words differently,
/// so equal texts are too strict, and comparing whole texts would load every text of a vault.
///
/// b-bit MinHash: each of the 128 minima (over 32-bit hashes) is kept as its low 16 bits, 256 bytes a
/// text. Two texts' minima are equal with probability J (their share of word pairs); two different
/// minima agree in their low halves by accident with probability 2^-16, so a kept pair agrees with
/// probability J + (1 - J) * 2^-16: the estimate is high by at most 1.5e-5, against its error of
/// sqrt(J(1-J)/128) = 0.04 around the threshold. Halves equal wherever the whole minima were, so
/// `similarity` is never lower than it was on the whole minima: no pair found before is lost.
/// The catalog indexes the first 64 halves as 32 bands of two (`Catalog.signatureBands`).
public struct TextSignature: Sendable, Equatable {
    /// How many minimum hashes a signature keeps (2 bytes each).
    public static let size = 128
    /// Texts whose estimated share of word pairs is at least this are the same paper read twice.
    /// Measured on 12 SROIE dev scans re-scanned (rotated 1.5°, scaled 90 %, blurred, JPEG 70) and read
    /// again by Tesseract: 10 of 12 at 0.31–0.61, the other two unreadable (0.0, 0.08); receipts of
    /// different shops at most 0.20. Receipts of one shop on other days reach 0.87 (a weekly same
    /// purchase): the dates and totals they differ in tell them apart (Vault+Duplicates).
    public static let sameText = 0.28

    /// The low half of each minimum.
    public let minima: [UInt16]

    /// nil for a text with no words.
    public init?(text: String) {
        guard let minima = Self.wholeMinima(text) else { return nil }
        self.minima = minima.map { UInt16(truncatingIfNeeded: $0) }
    }

    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.size * 2 else { return nil }
        minima = (0..<Self.size).map { UInt16(bytes[$0 * 2]) | UInt16(bytes[$0 * 2 + 1]) << 8 }
    }

    /// Little-endian, as stored: the catalog's band keys are slices of these bytes.
    public var bytes: [UInt8] { minima.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)] } }

    /// The estimated share of word pairs the two texts have in common (Jaccard), 0–1.
    /// A plain loop: `zip` and `filter` made it most of a `dups` whose receipts lack dates (debug build).
    public func similarity(_ other: TextSignature) -> Double {
        var equal = 0
        for i in 0..<Self.size where minima[i] == other.minima[i] { equal += 1 }
        return Double(equal) / Double(Self.size)
    }

    /// The 32-bit minima whose low halves a signature keeps (as catalogs before v15 stored them whole).
    static func wholeMinima(_ text: String) -> [UInt32]? {
        let hashes = asciiShingleHashes(text) ?? Set(shingles(words(text)).map { fnv1a($0.utf8) })
        guard !hashes.isEmpty else { return nil }
        var minima = [UInt32](repeating: .max, count: size)
        for base in hashes {
            for i in 0..<size {
                minima[i] = min(minima[i], UInt32(truncatingIfNeeded: mix(base ^ seeds[i])))
            }
        }
        return minima
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
