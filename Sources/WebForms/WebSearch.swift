import Foundation

/// The web list's word search: every word, as a word prefix, case and diacritics folded, in a
/// receipt's metadata, file names or the text extracted from its blobs (docs/DESIGN.md, "Web view
/// word search"). Nothing a user types is ever query syntax: each word is bound as a quoted string.
public enum WebSearch {
    /// The words of a search box, at most `limit`: split at white space and control characters
    /// (a NUL would end an FTS5 string early, and PostgreSQL refuses it in text), keeping only
    /// those with a letter or a digit, since punctuation alone is no word to look for.
    public static func words(_ text: String, limit: Int = 10) -> [String] {
        let pieces = text.unicodeScalars.split { $0.properties.isWhitespace || $0.properties.generalCategory == .control }
        return pieces.map { String(String.UnicodeScalarView($0)) }.filter(isWord).prefix(limit).map { $0 }
    }

    public static func isWord(_ word: String) -> Bool {
        word.contains { $0.isLetter || $0.isNumber } && !word.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    /// The FTS5 query requiring every word as a prefix (`"word"*`; a word the tokenizer splits, such
    /// as `23.45` or `hsa-7`, is a phrase of its parts, the last a prefix); nil when there is none.
    public static func match(_ words: [String]) -> String? {
        let terms = words.filter(isWord).map { "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"*" }
        return terms.isEmpty ? nil : terms.joined(separator: " ")
    }
}
