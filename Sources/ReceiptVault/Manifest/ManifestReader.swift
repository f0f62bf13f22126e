import BlobStore
import Foundation
import ReceiptExportLayout
#if canImport(Glibc)
import Glibc
#endif

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

    /// The column's value, without the `'` an export put before a cell a spreadsheet would run.
    subscript(_ column: ManifestColumn) -> String? { positions[column.ordinal].map { SpreadsheetCell.read(fields[$0]) } }
}

/// Streams a manifest (RFC 4180 CSV, UTF-8, header row) row by row through CSV.swift (`CSVChunks`), keeping track of
/// the line each row starts on (CSV.swift does not: quoted fields may span lines). Memory does not
/// grow with the file.
final class ManifestReader {
    let path: String
    /// The column of each CSV field, in header order.
    let columns: [ManifestColumn]
    private let positions: [Int?]
    private let rows: CSVChunks
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
        } catch let error as PathError {
            throw VaultError.bad("cannot read the manifest \(path): \(error.message)")
        }
        // Closed with the chunks, whether this ends well or not.
        rows = CSVChunks(fd)
        nextLine = 1
        guard let header = try Self.fields(rows, path, line: nextLine), !(header.count == 1 && header[0].isEmpty) else {
            throw VaultError.bad("the manifest \(path) is empty: expected a header row naming at least the column 'path'")
        }
        nextLine += 1 + Self.newlines(in: header)
        var seen = Set<ManifestColumn>()
        var columns: [ManifestColumn] = []
        var problems: [ManifestProblem] = []
        let known = ManifestColumn.allCases.map(\.rawValue).joined(separator: ", ")
        for raw in header {
            // A byte-order mark before it is gone already (`CSVChunks`).
            let name = raw.trimmingCharacters(in: .whitespaces).lowercased()
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
        while let fields = try Self.fields(rows, path, line: nextLine) {
            let line = nextLine
            nextLine += 1 + Self.newlines(in: fields)
            if fields.count == 1 && fields[0].isEmpty { continue }  // a blank line
            guard fields.count == columns.count else {
                return .failure(ManifestProblem(line: line, message:
                    "has \(fields.count) field\(fields.count == 1 ? "" : "s"), the header has \(columns.count)"))
            }
            return .success(ManifestRecord(line: line, fields: fields, positions: positions))
        }
        return nil
    }

    /// The next row's fields; `line` is the line it starts on.
    private static func fields(_ rows: CSVChunks, _ path: String, line: Int) throws -> [String]? {
        do {
            return try rows.next()
        } catch let error as CSVChunks.NotUTF8 {
            // A chunk starts with the row asked for: its lines follow this one.
            throw VaultError.bad("cannot read the manifest \(path) near line \(line + error.line - 1): it is not valid UTF-8 text")
        } catch let error as PathError {
            throw VaultError.bad("cannot read the manifest \(path): \(error.message)")
        }
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

/// A `ManifestReader` read a chunk of rows ahead, on a thread of its own: parsing (CSV.swift) costs
/// about as much as checking the rows, and the checks run on the thread that reads the catalog.
/// Hands the rows out in order, then the reader's error (if any) after the rows before it.
final class ManifestPrefetch: @unchecked Sendable {
    typealias Chunk = (rows: [Result<ManifestRecord, ManifestProblem>], end: Result<Bool, Error>)
    static let chunkRows = 1024

    // The reader is used by one thread at a time: the background reading a chunk, and no other until
    // `wait` has returned that chunk.
    private let reader: ManifestReader
    private var pending: Parallel.Future<Chunk>?
    private var rows: [Result<ManifestRecord, ManifestProblem>] = []
    private var index = 0
    private var end: Result<Bool, Error> = .success(false)

    init(_ reader: ManifestReader) {
        self.reader = reader
        pending = read()
    }

    private func read() -> Parallel.Future<Chunk> {
        Parallel.Future { [self] in
            var rows: [Result<ManifestRecord, ManifestProblem>] = []
            rows.reserveCapacity(Self.chunkRows)
            do {
                while rows.count < Self.chunkRows {
                    guard let row = try reader.next() else { return (rows, .success(true)) }
                    rows.append(row)
                }
                return (rows, .success(false))
            } catch {
                return (rows, .failure(error))
            }
        }
    }

    /// The next row, nil at the end of the manifest; throws what the reader threw, in its place.
    func next() throws -> Result<ManifestRecord, ManifestProblem>? {
        while index == rows.count {
            if try end.get() { return nil }
            guard let pending else { return nil }
            let chunk = pending.wait()
            (rows, index, end) = (chunk.rows, 0, chunk.end)
            // Read the next chunk while this one is checked, unless this one was the last.
            if case .success(false) = chunk.end { self.pending = read() } else { self.pending = nil }
        }
        defer { index += 1 }
        return rows[index]
    }
}
