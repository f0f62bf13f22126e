import BlobStore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The manifest's columns (CSV header names, case-insensitive, any order). Only `path` is required.
/// `filename` (the attachment's name inside the receipt; default: the last component of `path`) is an
/// addition of this project, written by `export` so names survive a round trip.
public enum ManifestColumn: String, CaseIterable, Sendable {
    case path, id, filename, merchant, date, total, currency, category, note, tags, sha256, zone

    /// Position in `allCases`, without hashing (asked for every cell of every row).
    var ordinal: Int {
        switch self {
        case .path: 0
        case .id: 1
        case .filename: 2
        case .merchant: 3
        case .date: 4
        case .total: 5
        case .currency: 6
        case .category: 7
        case .note: 8
        case .tags: 9
        case .sha256: 10
        case .zone: 11
        }
    }
}

/// One bad row (or a bad header, line 1) of a manifest.
public struct ManifestProblem: Error, Sendable, Equatable, Codable {
    public var line: Int
    public var message: String

    public init(line: Int, message: String) {
        self.line = line
        self.message = message
    }
}

/// A manifest with bad rows: nothing was imported. Every problem names its line.
public struct ManifestError: Error, CustomStringConvertible, Sendable {
    public let file: String
    public let problems: [ManifestProblem]

    /// One line per bad row: `FILE:LINE: message` (several problems of one row joined by "; ").
    public var lines: [String] {
        var out: [String] = []
        var current: (line: Int, messages: [String])?
        for p in problems {
            if current?.line == p.line {
                current?.messages.append(p.message)
                continue
            }
            if let c = current { out.append("\(file):\(c.line): " + c.messages.joined(separator: "; ")) }
            current = (p.line, [p.message])
        }
        if let c = current { out.append("\(file):\(c.line): " + c.messages.joined(separator: "; ")) }
        return out
    }
    public var description: String { lines.joined(separator: "\n") }
}

/// One data row of a manifest as read: the values of the header's columns and the line it starts on.
struct ManifestRecord {
    let line: Int
    let fields: [String]
    /// For each column (by `ordinal`), its field's index; nil when the header lacks the column.
    let positions: [Int?]

    subscript(_ column: ManifestColumn) -> String? { positions[column.ordinal].map { fields[$0] } }
}

/// Streams a manifest (RFC 4180 CSV, UTF-8, header row) row by row, keeping track of the line each row
/// starts on (quoted fields may span lines). Memory does not grow with the file.
final class ManifestReader {
    let path: String
    /// The column of each CSV field, in header order.
    let columns: [ManifestColumn]
    private let positions: [Int?]
    private let reader: CSVRowReader
    private var nextLine: Int

    /// Opens the manifest and checks its header: known columns only, no duplicates, `path` present.
    init(path: String) throws {
        self.path = path
        guard let st = try FileSystem.status(path, followLinks: true) else {
            throw VaultError.bad("cannot read the manifest \(path): no such file")
        }
        guard st.isRegular else { throw VaultError.bad("cannot read the manifest \(path): not a regular file") }
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(path, O_RDONLY | O_NONBLOCK)
        } catch let error as IOError {
            throw VaultError.bad("cannot read the manifest \(path): \(error.message)")
        }
        reader = CSVRowReader(fd)
        nextLine = 1
        guard let header = reader.next(), !(header.count == 1 && header[0].isEmpty) else {
            try Self.check(reader, path: path)
            throw VaultError.bad("the manifest \(path) is empty: expected a header row naming at least the column 'path'")
        }
        try Self.check(reader, path: path)
        nextLine += 1 + Self.newlines(in: header)
        var seen = Set<ManifestColumn>()
        var columns: [ManifestColumn] = []
        var problems: [ManifestProblem] = []
        let known = ManifestColumn.allCases.map(\.rawValue).joined(separator: ", ")
        for (index, raw) in header.enumerated() {
            var name = raw.trimmingCharacters(in: .whitespaces).lowercased()
            if index == 0, name.hasPrefix("\u{FEFF}") { name.removeFirst() }
            guard let column = ManifestColumn(rawValue: name) else {
                problems.append(ManifestProblem(line: 1, message: "unknown column '\(raw)' (known columns: \(known))"))
                continue
            }
            if !seen.insert(column).inserted {
                problems.append(ManifestProblem(line: 1, message: "column '\(name)' appears twice"))
            }
            columns.append(column)
        }
        if !seen.contains(.path) && problems.isEmpty {
            problems.append(ManifestProblem(line: 1, message: "the header has no 'path' column (columns: \(known))"))
        }
        if !problems.isEmpty { throw ManifestError(file: path, problems: problems) }
        self.columns = columns
        var positions = [Int?](repeating: nil, count: ManifestColumn.allCases.count)
        for (index, column) in columns.enumerated() { positions[column.ordinal] = index }
        self.positions = positions
    }

    /// The next non-blank row, or nil at the end. Throws when the file cannot be read or decoded;
    /// a row with the wrong number of fields comes back as a problem instead.
    func next() throws -> Result<ManifestRecord, ManifestProblem>? {
        while let fields = reader.next() {
            let line = nextLine
            nextLine += 1 + Self.newlines(in: fields)
            if fields.count == 1 && fields[0].isEmpty { continue }  // a blank line
            guard fields.count == columns.count else {
                return .failure(ManifestProblem(line: line, message:
                    "has \(fields.count) field\(fields.count == 1 ? "" : "s"), the header has \(columns.count)"))
            }
            return .success(ManifestRecord(line: line, fields: fields, positions: positions))
        }
        try Self.check(reader, path: path, line: nextLine)
        return nil
    }

    /// Why the rows ended early, if they did: a read error, or bytes that are not UTF-8 (on the line
    /// where they start).
    private static func check(_ reader: CSVRowReader, path: String, line: Int? = nil) throws {
        if let failure = reader.failure {
            throw VaultError.bad("cannot read the manifest \(path): \(failure.message)")
        }
        guard reader.invalidText else { return }
        let place = line.map { " near line \($0)" } ?? ""
        throw VaultError.bad("cannot read the manifest \(path)\(place): it is not valid UTF-8 text")
    }

    /// Line breaks inside the fields of one row (LF, CRLF or a lone CR each count once).
    static func newlines(in fields: [String]) -> Int {
        var count = 0
        for field in fields {
            var previousCR = false
            for unit in field.utf8 {
                if unit == 0x0A {
                    if !previousCR { count += 1 }
                    previousCR = false
                } else if unit == 0x0D {
                    count += 1
                    previousCR = true
                } else {
                    previousCR = false
                }
            }
        }
        return count
    }
}

/// RFC 4180 rows read straight from the bytes of a file descriptor (the structural characters are
/// ASCII, which UTF-8 never uses inside a multi-byte character; each field is checked to be UTF-8 as
/// it is made a String). It reads what CSV.swift read, which it replaces (ten times faster): a field
/// is quoted when its first character is `"`; inside, `""` is a quote and a lone `"` followed by a
/// character other than a comma or line break stands for itself (the character after it is dropped);
/// rows end at LF, CRLF, a lone CR or the end of the file; a byte-order mark at the start is skipped
/// (UTF-8's, and UTF-16's and UTF-32's, as CSV.swift did). The first read error or bytes that are not
/// UTF-8 end the rows (`failure`, `invalidText`).
final class CSVRowReader {
    private let fd: FileDescriptor
    private var buffer: [UInt8]
    private var position = 0
    private var count = 0
    private var atEnd = false
    private var field: [UInt8] = []
    private(set) var failure: IOError?
    private(set) var invalidText = false

    init(_ fd: FileDescriptor) {
        self.fd = fd
        buffer = [UInt8](repeating: 0, count: 1 << 16)
        refill()
        let boms: [[UInt8]] = [[0x00, 0x00, 0xFE, 0xFF], [0xFF, 0xFE, 0x00, 0x00], [0xEF, 0xBB, 0xBF], [0xFE, 0xFF], [0xFF, 0xFE]]
        if let bom = boms.first(where: { count >= $0.count && buffer[0..<$0.count].elementsEqual($0) }) {
            position = bom.count
        }
    }

    deinit { fd.close() }

    private func refill() {
        guard !atEnd else { return }
        do {
            let n = try buffer.withUnsafeMutableBytes { try fd.read(into: $0) }
            position = 0
            count = n
            if n == 0 { atEnd = true }
        } catch let error as IOError {
            failure = error
            atEnd = true
            count = 0
            position = 0
        } catch {
            atEnd = true
            count = 0
            position = 0
        }
    }

    /// The next byte, consumed.
    @inline(__always)
    private func take() -> UInt8? {
        if position == count {
            refill()
            if position == count { return nil }
        }
        defer { position += 1 }
        return buffer[position]
    }

    /// The next byte, left in place.
    @inline(__always)
    private func peek() -> UInt8? {
        if position == count {
            refill()
            if position == count { return nil }
        }
        return buffer[position]
    }

    /// The next row's fields, or nil at the end (or once the rows ended early).
    func next() -> [String]? {
        guard !invalidText, peek() != nil else { return nil }
        var row: [String] = []
        while true {
            let end = peek() == UInt8(ascii: "\"") ? readQuoted() : readUnquoted()
            guard let text = String(validating: field, as: UTF8.self) else {
                invalidText = true
                return nil
            }
            row.append(text)
            if end || failure != nil { return row }
            if peek() == nil {
                row.append("")  // a comma at the very end: one more, empty field
                return row
            }
        }
    }

    /// Consumes a line break's LF after a CR.
    private func endOfRow(after unit: UInt8) -> Bool {
        if unit == 0x0D, peek() == 0x0A { position += 1 }
        return true
    }

    /// Reads an unquoted field into `field`; returns whether the row ended with it.
    private func readUnquoted() -> Bool {
        field.removeAll(keepingCapacity: true)
        while let unit = take() {
            switch unit {
            case 0x0A, 0x0D: return endOfRow(after: unit)
            case UInt8(ascii: ","): return false
            default: field.append(unit)
            }
        }
        return true
    }

    /// Reads a quoted field (from its opening quote) into `field`; returns whether the row ended with it.
    private func readQuoted() -> Bool {
        field.removeAll(keepingCapacity: true)
        position += 1  // the opening quote (peeked)
        while let unit = take() {
            guard unit == UInt8(ascii: "\"") else {
                field.append(unit)
                continue
            }
            guard let after = take() else { return true }
            switch after {
            case 0x0A, 0x0D: return endOfRow(after: after)
            case UInt8(ascii: ","): return false
            case UInt8(ascii: "\""): field.append(after)
            default:
                // A lone quote: kept, and the character after it dropped (as CSV.swift did).
                field.append(unit)
                dropRestOfCharacter(startingWith: after)
            }
        }
        return true
    }

    /// Skips the continuation bytes of the character whose first byte was `lead` (that character is
    /// dropped whole; a malformed one is left for the field's UTF-8 check to refuse).
    private func dropRestOfCharacter(startingWith lead: UInt8) {
        let length = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0
        guard length > 0 else { field.append(lead); return }
        var character = [lead]
        for _ in 1..<length {
            guard let unit = peek(), unit & 0xC0 == 0x80 else { break }
            character.append(unit)
            position += 1
        }
        if String(validating: character, as: UTF8.self) == nil { field.append(contentsOf: character) }
    }
}
