import CSV
import Foundation

/// A CSV cell as the files the vault writes hold it, so that a spreadsheet shows text and never
/// runs it (OWASP's rule against CSV injection): a cell beginning with `=`, `+`, `-`, `@`, tab or CR
/// is written prefixed with `'`. A cell beginning with `'` is prefixed too, so reading takes exactly
/// one `'` off any cell that begins with `'` followed by one of these characters, and every value
/// comes back as it was (`-5.00` is written `'-5.00`, `'t Hoekje` `''t Hoekje`).
public enum SpreadsheetCell {
    /// The first characters a spreadsheet would take for a formula, and the escape itself.
    static func isGuarded(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "="), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "@"), 0x09, 0x0D, UInt8(ascii: "'"): true
        default: false
        }
    }

    /// `value` as it is written into a CSV cell.
    public static func written(_ value: String) -> String {
        guard let first = value.utf8.first, isGuarded(first) else { return value }
        return "'" + value
    }

    /// The value a cell read from a CSV file holds: `written` undone.
    public static func read(_ cell: String) -> String {
        let bytes = cell.utf8
        guard bytes.first == UInt8(ascii: "'"), let second = bytes.dropFirst().first, isGuarded(second) else { return cell }
        return String(cell.dropFirst())
    }
}

extension SpreadsheetCell {
    /// RFC 4180 rows (CSV.swift quotes them), CRLF line ends; a cell a spreadsheet would run as a
    /// formula is written as text (`SpreadsheetCell`).
    package static func csvData(_ rows: [[String]], what: String) throws -> Data {
        let stream = OutputStream(toMemory: ())
        do {
            let writer = try CSVWriter(stream: stream, newline: .crlf)
            for row in rows { try writer.write(row: row.map(SpreadsheetCell.written)) }
            writer.stream.close()
        } catch {
            throw ExportError("cannot write \(what): \(error)")
        }
        guard let data = stream.property(forKey: .dataWrittenToMemoryStreamKey) as? Data else {
            throw ExportError("cannot write \(what)")
        }
        return data
    }
}
