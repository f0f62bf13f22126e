import BlobStore
import CSV

/// The rows of a CSV file, parsed by CSV.swift a chunk of text at a time. CSV.swift reading an
/// `InputStream` decodes every character through three layers of iterators; handed a `String` it
/// parses the same rows in half the time (a 100,000-row manifest: 1.56 → 0.85 s). A chunk ends after
/// a line break, and only where CSV.swift, too, ends a row there: the text is parsed with one more
/// line after it, `CSVChunks.sentinel`, which comes back as a row of its own exactly when the break
/// ended a row (inside a quoted field it would be part of that field). Otherwise another break is
/// tried (`parseChunk`). The rows are those of parsing the whole file at once; memory holds one
/// chunk (and a field longer than a chunk, as CSV.swift's own buffer would).
final class CSVChunks {
    /// Bytes read per chunk (about 330 manifest rows: less than `ManifestPrefetch` reads ahead, so
    /// parsing stays spread over the rows the checks take in the meantime).
    let chunkBytes: Int
    private static let sentinel = "\u{0}"
    private let fd: FileDescriptor
    /// Bytes read and not yet parsed; they start at the start of a row.
    private var pending: [UInt8] = []
    private var rows: [[String]] = []
    private var index = 0
    private var atEnd = false
    /// The file's first bytes were read (and a byte-order mark dropped).
    private var startRead = false
    /// Texts handed to CSV.swift so far, and the most bytes held unparsed at once.
    private(set) var parses = 0
    private(set) var mostPending = 0

    /// Takes `fd` over: it is closed when the chunks go.
    init(_ fd: FileDescriptor, chunkBytes: Int = 64 << 10) {
        self.fd = fd
        self.chunkBytes = max(1, chunkBytes)
    }

    deinit { fd.close() }

    /// The next row, nil after the last. Throws `PathError` when the file cannot be read, `NotUTF8`
    /// (on a line of the chunk that starts with this row) when its bytes are not UTF-8.
    func next() throws -> [String]? {
        while index == rows.count {
            if atEnd && pending.isEmpty { return nil }
            try parseChunk()
        }
        defer { index += 1 }
        return rows[index]
    }

    /// Parses the next chunk's rows into `rows`. The chunk ends at the last line break with an even
    /// count of quotes before it (outside quotes, as RFC 4180 pairs them) or, when CSV.swift does not
    /// end a row there, at the last one with an odd count (a stray quote in an unquoted field, which
    /// CSV.swift keeps as text, shifts the count by one). When neither is a row's end, or there is no
    /// break at all, the next try goes at least twice as far: a file of such rows is parsed a bounded
    /// number of times over (`parses` counts them), never once per line.
    private func parseChunk() throws {
        rows = []
        index = 0
        var floor = 0  // the cut must fall past this
        var want = chunkBytes  // bytes to have read
        while true {
            while !atEnd && pending.count < want { try readMore() }
            if atEnd, pending.count - floor <= chunkBytes || lastBreak(after: floor) == nil {
                // The rest of the file: parsed as it is, as a stream would be.
                rows = try parse(pending[...], sentinel: false)
                pending = []
                return
            }
            let (even, odd) = cuts(after: floor)
            for cut in [even, odd].compactMap({ $0 }) {
                var parsed = try parse(pending[..<cut], sentinel: true)
                if parsed.last == [Self.sentinel] {
                    parsed.removeLast()
                    rows = parsed
                    pending.removeSubrange(..<cut)
                    return
                }
            }
            floor = even == nil && odd == nil ? pending.count : 2 * max(even ?? 0, odd ?? 0)
            want = max(2 * want, floor + chunkBytes)
        }
    }

    /// Reads another chunk's bytes onto `pending`, or notes the end of the file. A byte-order mark at
    /// the start of the file is dropped, as CSV.swift's stream reader drops it.
    private func readMore() throws {
        let start = pending.count
        pending.append(contentsOf: repeatElement(0, count: chunkBytes))
        let n = try pending.withUnsafeMutableBytes { buffer in
            try fd.readFully(into: UnsafeMutableRawBufferPointer(rebasing: buffer[start...]))
        }
        pending.removeSubrange((start + n)...)
        mostPending = max(mostPending, pending.count)
        if n < chunkBytes { atEnd = true }
        if !startRead && (pending.count >= 3 || atEnd) {
            startRead = true
            if pending.starts(with: [0xEF, 0xBB, 0xBF]) { pending.removeFirst(3) }
        }
    }

    /// The last line break past `from` with an even count of quotes before it, and the last with an
    /// odd count (each as the offset just after it).
    private func cuts(after from: Int) -> (even: Int?, odd: Int?) {
        var quotes = 0
        var even: Int?, odd: Int?
        for i in pending.indices {
            let byte = pending[i]
            if byte == 0x22 {
                quotes += 1
            } else if byte == 0x0A && i >= from {
                if quotes % 2 == 0 { even = i + 1 } else { odd = i + 1 }
            }
        }
        return (even, odd)
    }

    private func lastBreak(after from: Int) -> Int? {
        from < pending.count ? pending[from...].lastIndex(of: 0x0A) : nil
    }

    /// CSV.swift's rows of `bytes`, and of one more line, `sentinel`, when asked. Bytes that are not
    /// UTF-8 are refused (CSV.swift's stream reader ended a row there and went on without a word; a
    /// `String` would replace them): checked here, on the text CSV.swift gets, not in a pass before.
    private func parse(_ bytes: ArraySlice<UInt8>, sentinel: Bool) throws -> [[String]] {
        parses += 1
        guard var text = String(validating: bytes, as: UTF8.self) else { throw NotUTF8(line: Self.firstLineNotUTF8(bytes)) }
        if sentinel { text += Self.sentinel }
        guard let reader = try? CSVReader(string: text, hasHeaderRow: false) else { return [] }
        var rows: [[String]] = []
        while let row = reader.next() { rows.append(row) }
        return rows
    }

    /// The first bytes that are not UTF-8 are on `line` of the chunk (1: its first, lines counted by LF).
    struct NotUTF8: Error {
        let line: Int
    }

    private static func firstLineNotUTF8(_ bytes: ArraySlice<UInt8>) -> Int {
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var line = 1
        while case .valid(let scalar) = parser.parseScalar(from: &iterator) {
            if scalar.count == 1 && scalar.first == 0x0A { line += 1 }
        }
        return line
    }
}
