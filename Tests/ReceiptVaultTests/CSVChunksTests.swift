import BlobStore
import Foundation
import XCTest
@testable import ReceiptVault

/// `CSVChunks` parses a file a chunk at a time; its rows must be those of parsing the file at once,
/// wherever the chunks end (inside quoted fields, between CR and LF, in a multi-byte character's line).
final class CSVChunksTests: XCTestCase {
    private func rows(of text: String, chunkBytes: Int) throws -> [[String]] {
        try rowsAndParses(of: text, chunkBytes: chunkBytes).rows
    }

    private func rowsAndParses(of text: String, chunkBytes: Int) throws -> (rows: [[String]], parses: Int) {
        let read = try chunks(of: Data(text.utf8), chunkBytes: chunkBytes)
        return (read.rows, read.chunks.parses)
    }

    private func chunks(of data: Data, chunkBytes: Int) throws -> (rows: [[String]], chunks: CSVChunks) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("chunks-\(UUID().uuidString).csv").path
        try data.write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let chunks = CSVChunks(try FileDescriptor.open(path, O_RDONLY), chunkBytes: chunkBytes)
        var rows: [[String]] = []
        while let row = try chunks.next() { rows.append(row) }
        return (rows, chunks)
    }

    /// Whole (one chunk larger than the file) and cut every few bytes, the same rows; and the whole
    /// parse is RFC 4180's.
    func testRowsAreTheSameWhereverChunksEnd() throws {
        let text = "path,note\r\nfiles/a.txt,\"two\nlines, \"\"quoted\"\"\"\nfiles/é.pdf,plain\n\"x\"\"\",\"\r\n\"\nlast,\"no break\""
        let expected = [["path", "note"], ["files/a.txt", "two\nlines, \"quoted\""], ["files/é.pdf", "plain"],
                        ["x\"", "\r\n"], ["last", "no break"]]
        XCTAssertEqual(try rows(of: text, chunkBytes: 1 << 20), expected)
        for size in [1, 2, 3, 5, 8, 13, 64] {
            XCTAssertEqual(try rows(of: text, chunkBytes: size), expected, "chunks of \(size) bytes")
        }
    }

    /// Text of random quotes, commas, breaks and letters (quotes unpaired as often as not): cut
    /// anywhere, the rows stay those of the whole text.
    func testRandomTextParsesAsAWhole() throws {
        let alphabet: [String] = ["a", "b", ",", "\"", "\"", "\n", "\r", "\r\n", "é", " "]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func random(_ n: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(n))
        }
        for round in 0..<25 {
            let text = (0..<(40 + random(400))).map { _ in alphabet[random(alphabet.count)] }.joined()
            let whole = try rows(of: text, chunkBytes: 1 << 20)
            for size in [1, 4, 9, 32] {
                XCTAssertEqual(try rows(of: text, chunkBytes: size), whole, "round \(round), chunks of \(size): \(text.debugDescription)")
            }
        }
    }

    /// A quote that never closes makes every later break fall inside its field: the tries to cut
    /// there go at least twice as far each time, so 4,000 such lines are parsed a handful of times,
    /// not once per line, and still give the rows of the whole.
    func testAnUnclosedQuoteIsParsedABoundedNumberOfTimes() throws {
        let text = "path,note\nx,\"open\n" + String(repeating: "a,b\n", count: 4000) + "end\n"
        let whole = try rowsAndParses(of: text, chunkBytes: 1 << 20)
        XCTAssertEqual(whole.parses, 1)
        XCTAssertEqual(whole.rows.count, 2, "the header, and one row whose field runs to the end")
        let cut = try rowsAndParses(of: text, chunkBytes: 64)
        XCTAssertEqual(cut.rows, whole.rows)
        XCTAssertLessThanOrEqual(cut.parses, 16, "parsed \(cut.parses) times")
    }

    /// The chunks own the manifest's descriptor: a manifest refused at its header (empty, an unknown
    /// column) or read to its end leaves no file open.
    func testManifestsReadOrRefusedLeaveNoFileOpen() throws {
        func openFiles() throws -> Int { try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("chunks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let texts = ["", "path,colour\nx,red\n", "path,note\nfiles/a.txt,fine\n"]
        let paths = try texts.enumerated().map { i, text in
            let path = folder.appendingPathComponent("m\(i).csv").path
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
        let before = try openFiles()
        for _ in 0..<20 {
            for path in paths {
                guard let reader = try? ManifestReader(path: path) else { continue }
                while try reader.next() != nil {}
            }
        }
        XCTAssertEqual(try openFiles(), before)
    }

    /// A byte-order mark at the start is dropped, as CSV.swift's stream reader drops it: a quoted
    /// first header stays quoted, whatever the chunks.
    func testAByteOrderMarkIsDropped() throws {
        let text = "\u{FEFF}\"path\",note\nx,y\n"
        for size in [1, 2, 3, 5, 64, 1 << 20] {
            XCTAssertEqual(try rows(of: text, chunkBytes: size), [["path", "note"], ["x", "y"]], "chunks of \(size)")
        }
    }

    /// One stray quote (kept as text by CSV.swift) shifts the count of quotes by one for the rest of
    /// the file; with quoted fields that span lines after it, the breaks with an even count are then
    /// inside those fields. The chunks still end at rows' ends, near their size, and hold little.
    func testAStrayQuoteDoesNotMakeTheChunksGrow() throws {
        let text = "path,note\nx,12\" ruler\n" + String(repeating: "f,\"two\nlines\"\n", count: 2000)
        let whole = try rows(of: text, chunkBytes: 1 << 20)
        XCTAssertEqual(whole.count, 2002)
        XCTAssertEqual(whole[1], ["x", "12\" ruler"])
        let read = try chunks(of: Data(text.utf8), chunkBytes: 256)
        XCTAssertEqual(read.rows, whole)
        XCTAssertLessThanOrEqual(read.chunks.mostPending, 1024, "held \(read.chunks.mostPending) bytes of a \(text.utf8.count)-byte file")
    }

    /// Bytes that are not UTF-8 (the file changed after it was checked) are refused, not replaced.
    func testBytesThatAreNotUTF8AreRefused() throws {
        XCTAssertThrowsError(try chunks(of: Data([0x61, 0x2C, 0xFF, 0x0A, 0x62, 0x0A]), chunkBytes: 64)) {
            XCTAssertTrue($0 is CSVChunks.NotUTF8, "\($0)")
        }
        // On its line of the chunk, whichever chunk it falls in.
        for size in [4, 64] {
            XCTAssertThrowsError(try chunks(of: Data("a,b\nc,d\n\"e\nf".utf8 + [0xE9] + Array("\"\n".utf8)), chunkBytes: size)) {
                XCTAssertEqual(($0 as? CSVChunks.NotUTF8)?.line, size == 64 ? 4 : 2, "chunks of \(size): \($0)")
            }
        }
    }
}
