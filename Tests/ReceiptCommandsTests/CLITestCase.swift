import BlobStore
import Foundation
import TestSupport
import XCTest

/// Drives the built `receipt` binary against a fresh vault in a temporary folder.
class CLITestCase: XCTestCase {
    var folder: TemporaryFolder!
    var vault: String { folder.file("vault") }

    override func setUpWithError() throws {
        folder = TemporaryFolder("receipt-cli")
        guard FileManager.default.isExecutableFile(atPath: ReceiptBinary.path) else {
            XCTFail("the receipt binary is not built at \(ReceiptBinary.path): run tools/test (it builds it)")
            throw CocoaError(.fileNoSuchFile)
        }
        let r = try receipt("init")
        XCTAssertEqual(r.status, 0, r.stderr)
    }

    override func tearDown() {
        folder = nil
    }

    /// Runs `receipt --vault VAULT ARGS...`.
    @discardableResult
    func receipt(_ args: String..., environment: [String: String] = [:]) throws -> ReceiptBinary.Result {
        try ReceiptBinary.run(["--vault", vault] + args, environment: environment, currentDirectory: folder.path)
    }

    @discardableResult
    func receipt(_ args: [String]) throws -> ReceiptBinary.Result {
        try ReceiptBinary.run(["--vault", vault] + args, currentDirectory: folder.path)
    }

    /// Runs with `--json`, expects exit 0 and one JSON document on stdout.
    func json(_ args: String..., status: Int32 = 0, file: StaticString = #filePath, line: UInt = #line) throws -> Any {
        let r = try receipt(args + ["--json"])
        XCTAssertEqual(r.status, status, "stderr: \(r.stderr)", file: file, line: line)
        return try JSONSerialization.jsonObject(with: r.stdoutData, options: [.fragmentsAllowed])
    }

    func list() throws -> [[String: Any]] {
        try XCTUnwrap(try json("list") as? [[String: Any]])
    }

    /// Imports one file with metadata and returns its receipt id.
    @discardableResult
    func importFile(_ name: String, _ bytes: [UInt8], _ meta: String...) throws -> String {
        let path = try folder.write("in/" + name, bytes)
        let out = try XCTUnwrap(try json(["import", path] + meta) as? [String: Any])
        let imported = try XCTUnwrap(out["imported"] as? [[String: Any]])
        return try XCTUnwrap(imported.first?["id"] as? String)
    }

    func json(_ args: [String], status: Int32 = 0, file: StaticString = #filePath, line: UInt = #line) throws -> Any {
        let r = try receipt(args + ["--json"])
        XCTAssertEqual(r.status, status, "stderr: \(r.stderr)", file: file, line: line)
        return try JSONSerialization.jsonObject(with: r.stdoutData, options: [.fragmentsAllowed])
    }

    /// Every file under `path` (relative paths, sorted) with its content: a vault's full state.
    func snapshot(_ path: String) throws -> [String: Data] {
        var out: [String: Data] = [:]
        guard let e = FileManager.default.enumerator(atPath: path) else { return out }
        while let rel = e.nextObject() as? String {
            let full = path + "/" + rel
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: full, isDirectory: &isDir), !isDir.boolValue {
                out[rel] = FileManager.default.contents(atPath: full) ?? Data()
            } else {
                out[rel + "/"] = Data()
            }
        }
        return out
    }

    /// What a command could change: the receipts and counts as the vault reports them, and every file
    /// but the catalog's own (SQLite may checkpoint its WAL into the main file on any open).
    func state() throws -> [String: Data] {
        var files = try snapshot(vault).filter { k, _ in
            !k.hasPrefix("catalog.sqlite") && k != "lock"
        }
        files["<list>"] = try receipt("list", "--json").stdoutData
        files["<stats>"] = try receipt("stats", "--json").stdoutData
        return files
    }

    /// Asserts the command fails with a status other than 0 and 1 (or `status`), one line on stderr
    /// containing `mention`, nothing on stdout, and leaves the vault as it was.
    func assertRefused(_ args: [String], mentioning mention: String, status: Int32 = 2,
                       file: StaticString = #filePath, line: UInt = #line) throws {
        let before = try state()
        let r = try receipt(args)
        XCTAssertEqual(r.status, status, "stderr: \(r.stderr)", file: file, line: line)
        XCTAssertTrue(r.stderr.contains(mention), "stderr \(r.stderr.debugDescription) lacks \(mention.debugDescription)",
                      file: file, line: line)
        XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, "not one line: \(r.stderr)", file: file, line: line)
        XCTAssertTrue(r.stdout.isEmpty, "stdout: \(r.stdout)", file: file, line: line)
        let after = try state()
        XCTAssertEqual(Set(before.keys), Set(after.keys), "files changed", file: file, line: line)
        for (k, v) in before { XCTAssertEqual(after[k], v, "\(k) changed", file: file, line: line) }
    }
}

/// Small valid files of each kind the fixtures hold.
enum Samples {
    static let pdf = Array("""
        %PDF-1.4
        1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj
        2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj
        trailer << /Root 1 0 R >>
        %%EOF

        """.utf8)
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D] + Array("IHDR".utf8) + [1, 2, 3]
    static let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10] + Array("JFIF".utf8) + [0, 1, 2, 3, 0xFF, 0xD9]
    static let text = Array("ACME HARDWARE\n2 x screws 3.40\nTOTAL 6.80 EUR\n".utf8)
}
