import BlobStore
import CSV

/// The rows of a CSV file, parsed by CSV.swift a chunk of text at a time. CSV.swift reading an
/// `InputStream` decodes every character through three layers of iterators; handed a `String` it
/// parses the same rows in half the time (a 100,000-row manifest: 1.56 → 0.85 s). A chunk ends after
/// a line break, and only where CSV.swift, too, ends a row there: the text is parsed with one more
/// line after it, `CSVChunks.sentinel`, which comes back as a row of its own exactly when the break
/// ended a row (inside a quoted field it would be part of that field). Otherwise the chunk is parsed
/// again to a break at least twice as far. The rows are those of parsing the whole file at once; memory holds one
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
    /// Texts handed to CSV.swift so far.
    private(set) var parses = 0

    /// Takes `fd` over: it is closed when the chunks go.
    init(_ fd: FileDescriptor, chunkBytes: Int = 64 << 10) {
        self.fd = fd
        self.chunkBytes = max(1, chunkBytes)
    }

    deinit { fd.close() }

    /// The next row, nil after the last. Throws `PathError` when the file cannot be read.
    func next() throws -> [String]? {
        while index == rows.count {
            if atEnd && pending.isEmpty { return nil }
            try parseChunk()
        }
        defer { index += 1 }
        return rows[index]
    }

    /// Parses the next chunk's rows into `rows`. A cut that falls inside a quoted field (or a line
    /// longer than what was read) sends the next try at least twice as far, so a file of such rows
    /// is parsed a bounded number of times over (`parses` counts them), never once per line.
    private func parseChunk() throws {
        rows = []
        index = 0
        var floor = 0  // the cut must fall past this
        var want = chunkBytes  // bytes to have read
        while true {
            while !atEnd && pending.count < want { try readMore() }
            if atEnd, pending.count - floor <= chunkBytes || lastBreak(after: floor) == nil {
                // The rest of the file: parsed as it is, as a stream would be.
                rows = parse(pending[...], sentinel: false)
                pending = []
                return
            }
            if let cut = cut(after: floor) {
                var parsed = parse(pending[..<cut], sentinel: true)
                if parsed.last == [Self.sentinel] {
                    parsed.removeLast()
                    rows = parsed
                    pending.removeSubrange(..<cut)
                    return
                }
                // The break is inside a quoted field (its quotes are not paired as RFC 4180 pairs them).
                floor = 2 * cut
            } else {
                floor = pending.count
            }
            want = max(2 * want, floor + chunkBytes)
        }
    }

    /// Reads another chunk's bytes onto `pending`, or notes the end of the file.
    private func readMore() throws {
        let start = pending.count
        pending.append(contentsOf: repeatElement(0, count: chunkBytes))
        let n = try pending.withUnsafeMutableBytes { buffer in
            try fd.readFully(into: UnsafeMutableRawBufferPointer(rebasing: buffer[start...]))
        }
        pending.removeSubrange((start + n)...)
        if n < chunkBytes { atEnd = true }
    }

    /// Where to end a chunk: after the last line break past `from` with an even count of quotes
    /// before it (outside quotes, as RFC 4180 pairs them), or else after the first break past `from`.
    private func cut(after from: Int) -> Int? {
        var quotes = 0
        var evenBreak: Int?
        var firstBreak: Int?
        for i in pending.indices {
            let byte = pending[i]
            if byte == 0x22 {
                quotes += 1
            } else if byte == 0x0A && i >= from {
                if firstBreak == nil { firstBreak = i + 1 }
                if quotes % 2 == 0 { evenBreak = i + 1 }
            }
        }
        return evenBreak ?? firstBreak
    }

    private func lastBreak(after from: Int) -> Int? {
        from < pending.count ? pending[from...].lastIndex(of: 0x0A) : nil
    }

    /// CSV.swift's rows of `bytes` (valid UTF-8: the manifest was checked), and of one more line,
    /// `sentinel`, when asked.
    private func parse(_ bytes: ArraySlice<UInt8>, sentinel: Bool) -> [[String]] {
        parses += 1
        var text = String(decoding: bytes, as: UTF8.self)
        if sentinel { text += Self.sentinel }
        guard let reader = try? CSVReader(string: text, hasHeaderRow: false) else { return [] }
        var rows: [[String]] = []
        while let row = reader.next() { rows.append(row) }
        return rows
    }
}
