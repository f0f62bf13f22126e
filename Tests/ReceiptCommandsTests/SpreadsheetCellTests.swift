import Foundation
import TestSupport
import XCTest

/// The CSV files an export writes (manifest.csv, a claim's index.csv) and `report --csv` hold no
/// cell a spreadsheet would run as a formula (OWASP's CSV injection rule: `'` before `=`, `+`, `-`,
/// `@`, tab, CR, and before `'` itself), and `import --manifest` reads every value back unchanged.
final class SpreadsheetCellTests: CLITestCase {
    /// Receipts whose fields begin with each character a spreadsheet runs, and with `'`.
    func fill() throws -> [String] {
        [
            try importFile("a.txt", Array("a".utf8), "--merchant", "=HYPERLINK(\"http://evil.example\",\"x\")", "--date", "2025-01-02",
                           "--total=-5.00", "--currency", "EUR", "--category", "@SUM(A1:A9)", "--note=\tindented",
                           "--tag=+plus", "--tag=-minus", "--no-index"),
            try importFile("b.txt", Array("b".utf8), "--merchant", "'t Hoekje", "--date", "2025-01-03", "--total", "7",
                           "--currency", "EUR", "--category", "''quoted", "--note", "\rcarriage", "--no-index"),
            try importFile("c.txt", Array("c".utf8), "--merchant", "'=1+1", "--date", "2025-01-04", "--total", "+3",
                           "--currency", "EUR", "--category", "plain", "--no-index"),
        ]
    }

    /// The CSV's rows, parsed as a spreadsheet would before it looks at a cell (quotes taken off).
    func cells(_ path: String) throws -> [[String]] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var rows: [[String]] = [[]]
        var cell = ""
        var quoted = false
        var previous: Character?
        for c in text {
            if quoted {
                if c == "\"" { quoted = false } else { cell.append(c) }
            } else if c == "\"" {
                if previous == "\"" { cell.append("\"") }
                quoted = true
            } else if c == "," {
                rows[rows.count - 1].append(cell)
                cell = ""
            } else if c == "\r\n" || c == "\n" {
                rows[rows.count - 1].append(cell)
                cell = ""
                rows.append([])
            } else {
                cell.append(c)
            }
            previous = c
        }
        return rows.filter { !$0.isEmpty && $0 != [""] }
    }

    func assertNoCellRuns(_ rows: [[String]], file: StaticString = #filePath, line: UInt = #line) {
        for row in rows {
            for cell in row {
                if let first = cell.unicodeScalars.first {
                    XCTAssertFalse("=+-@\t\r".unicodeScalars.contains(first), "a spreadsheet runs \(cell.debugDescription)",
                                   file: file, line: line)
                }
            }
        }
    }

    func testExportedCellsAreTextToASpreadsheetAndReimportUnchanged() throws {
        _ = try fill()
        let dest = folder.file("out")
        let out = try receipt("export", dest, "--for", "claim")
        XCTAssertEqual(out.status, 0, out.stderr)

        let manifest = try cells(dest + "/manifest.csv")
        assertNoCellRuns(manifest)
        let header = manifest[0]
        func column(_ name: String) -> [String] {
            let i = header.firstIndex(of: name)!
            return manifest.dropFirst().map { $0[i] }
        }
        XCTAssertEqual(column("merchant"), ["'=HYPERLINK(\"http://evil.example\",\"x\")", "''t Hoekje", "''=1+1"])
        XCTAssertEqual(column("total"), ["'-5.00", "7", "3"])
        XCTAssertEqual(column("category"), ["'@SUM(A1:A9)", "'''quoted", "plain"])
        XCTAssertEqual(column("note"), ["'\tindented", "'\rcarriage", ""])
        XCTAssertEqual(column("tags"), ["'+plus;-minus", "", ""])

        let index = try cells(dest + "/index.csv")
        assertNoCellRuns(index)
        XCTAssertEqual(index[1][2], "'=HYPERLINK(\"http://evil.example\",\"x\")")
        XCTAssertEqual(index[1][3], "'-5.00")

        let report = try receipt("report", "--by", "merchant", "--csv", folder.file("report.csv"))
        XCTAssertEqual(report.status, 0, report.stderr)
        assertNoCellRuns(try cells(folder.file("report.csv")))

        // Back in an empty vault, every value is what it was.
        let other = folder.file("other")
        XCTAssertEqual(try ReceiptBinary.run(["--vault", other, "init"]).status, 0)
        let back = try ReceiptBinary.run(["--vault", other, "import", "--manifest", dest + "/manifest.csv", "--no-index"])
        XCTAssertEqual(back.status, 0, back.stderr)
        XCTAssertEqual(try ReceiptBinary.run(["--vault", other, "list", "--json"]).stdout, try receipt("list", "--json").stdout)
    }

    /// A manifest written by hand (or by a spreadsheet that kept the `'`): the escape is taken off.
    func testAHandWrittenManifestWithEscapedCellsImportsTheirValues() throws {
        try folder.write("m/a.txt", "a")
        try folder.write("m/manifest.csv", "path,merchant,total,currency,note\r\na.txt,'=cmd,'-12.50,EUR,'t is zo\r\n")
        let r = try receipt("import", "--manifest", folder.file("m/manifest.csv"), "--no-index")
        XCTAssertEqual(r.status, 0, r.stderr)
        let listed = try list()
        XCTAssertEqual(listed.first?["merchant"] as? String, "=cmd")
        XCTAssertEqual(listed.first?["total"] as? String, "-12.50")
        XCTAssertEqual(listed.first?["note"] as? String, "'t is zo", "a ' before any other character is the value's own")
    }
}
