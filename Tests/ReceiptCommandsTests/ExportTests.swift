import BlobStore
import Foundation
import TestSupport
import XCTest
import ZIPFoundation

/// `receipt export DEST [--zip]` and the round trip through `import --manifest`.
final class ExportTests: CLITestCase {
    /// A vault with receipts whose metadata tries every trick: slashes, dots, newlines, quotes,
    /// commas, unicode, no date, several attachments, a large (external) blob.
    func fillVault() throws -> [String] {
        var ids: [String] = []
        ids.append(try importFile("receipt.pdf", Samples.pdf, "--merchant", "../../etc/Acme, Inc.\n\"quoted\"",
                                  "--date", "2025-03-04", "--total", "12.34", "--currency", "USD",
                                  "--category", "a/b/..", "--note", "line 1\nline 2, \"x\"", "--tag", "tax", "--tag", "home"))
        ids.append(try importFile("café.txt", Samples.text, "--merchant", "Café Müller", "--date", "2025-03-04"))
        ids.append(try importFile(".hidden", Samples.png))
        ids.append(try importFile("large.jpg", [0xFF, 0xD8, 0xFF] + TestData.random(400_000, seed: 3),
                                  "--merchant", "/", "--date", "2024-12-31", "--category", "..", "--total=-5"))
        let extra = try folder.write("in/page2.jpg", Samples.jpeg)
        XCTAssertEqual(try receipt("attach", ids[0], extra).status, 0)
        return ids
    }

    /// Every regular file under `path`, relative, sorted.
    func files(_ path: String) -> [String] {
        let e = FileManager.default.enumerator(atPath: path)
        var out: [String] = []
        while let rel = e?.nextObject() as? String {
            var dir: ObjCBool = false
            if FileManager.default.fileExists(atPath: path + "/" + rel, isDirectory: &dir), !dir.boolValue { out.append(rel) }
        }
        return out.sorted()
    }

    func testFolderExportHasSafeReadableNamesManifestAndListing() throws {
        let ids = try fillVault()
        let outside = Set(try FileManager.default.contentsOfDirectory(atPath: folder.path))
        let dest = folder.file("export")
        let out = try XCTUnwrap(try json("export", dest) as? [String: Any])
        XCTAssertEqual(Set(out.keys), ["destination", "zip", "receipts", "files", "failed", "bytes"])
        XCTAssertEqual(out["receipts"] as? Int, 4)
        XCTAssertEqual((out["files"] as? [Any])?.count, 5)
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: folder.path)), outside.union(["export"]),
                       "nothing written beside the export")
        let names = files(dest)
        let p = { (id: String) in String(id.prefix(8)) }
        XCTAssertEqual(names, [
            "2024/12/2024-12-31_large_\(p(ids[3])).jpg",
            "2025/03/2025-03-04_cafe-muller_\(p(ids[1])).txt",
            "2025/03/2025-03-04_etc-acme-inc-quoted_\(p(ids[0]))_1.pdf",
            "2025/03/2025-03-04_etc-acme-inc-quoted_\(p(ids[0]))_2.jpg",
            "manifest.csv",
            "receipts.json",
            "undated/hidden_\(p(ids[2])).png",
        ].sorted())
        for name in names {
            XCTAssertTrue(name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "/._-".contains($0)) }, name)
            XCTAssertFalse(name.split(separator: "/").contains { $0.hasPrefix(".") }, name)
        }
        let pdf = try Data(contentsOf: URL(fileURLWithPath: dest + "/2025/03/2025-03-04_etc-acme-inc-quoted_\(p(ids[0]))_1.pdf"))
        XCTAssertEqual(Array(pdf), Samples.pdf)
        // receipts.json is the list shape.
        let listed = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dest + "/receipts.json")))
        XCTAssertEqual(listed as? NSArray, try json("list") as? NSArray)
        let manifest = try String(contentsOfFile: dest + "/manifest.csv", encoding: .utf8)
        XCTAssertTrue(manifest.hasPrefix("path,id,zone,date,merchant,total,currency,category,note,tags,filename,sha256,status,claim,reimbursed_on\r\n"))
        XCTAssertTrue(manifest.contains("\"../../etc/Acme, Inc.\n\"\"quoted\"\"\""), "quoted as RFC 4180")
    }

    /// A list's JSON without what is left to review (`filled`, `suggestions`): an export carries a filled
    /// field as the ordinary value it is, and its re-import takes it as given, so only the review state differs.
    func withoutReadings(_ json: String) throws -> NSArray {
        let list = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
        return list.map { $0.filter { $0.key != "filled" && $0.key != "suggestions" } } as NSArray
    }

    func testFolderRoundTripGivesBackTheSameReceiptsIdsAndBytes() throws {
        _ = try fillVault()
        let dest = folder.file("export")
        XCTAssertEqual(try receipt("export", dest).status, 0)
        let original = try receipt("list", "--json").stdout
        let other = folder.file("other")
        XCTAssertEqual(try ReceiptBinary.run(["--vault", other, "init"]).status, 0)
        let r = try ReceiptBinary.run(["--vault", other, "import", "--manifest", dest + "/manifest.csv"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(try withoutReadings(ReceiptBinary.run(["--vault", other, "list", "--json"]).stdout), try withoutReadings(original))
        for name in files(dest) where !name.hasSuffix(".csv") && !name.hasSuffix(".json") {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: dest + "/" + name))
            let cat = try ReceiptBinary.run(["--vault", other, "cat", TestData.sha256(Array(bytes))])
            XCTAssertEqual(cat.stdoutData, bytes, name)
        }
        // Importing the same export again changes nothing.
        XCTAssertEqual(try ReceiptBinary.run(["--vault", other, "import", "--manifest", dest + "/manifest.csv"]).status, 0)
        XCTAssertEqual(try withoutReadings(ReceiptBinary.run(["--vault", other, "list", "--json"]).stdout), try withoutReadings(original))
    }

    func testZipRoundTripAfterUnzipping() throws {
        _ = try fillVault()
        let zip = folder.file("tax-2025.zip")
        let out = try XCTUnwrap(try json("export", zip, "--zip") as? [String: Any])
        XCTAssertEqual(out["zip"] as? Bool, true)
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: folder.path)), ["vault", "in", "tax-2025.zip"],
                       "no staging file left beside the zip")
        // ZIPFoundation compares standardized paths (the temporary folder's path holds a "//").
        let unzipped = URL(fileURLWithPath: folder.file("unzipped")).standardizedFileURL.path
        try FileManager.default.unzipItem(at: URL(fileURLWithPath: zip), to: URL(fileURLWithPath: unzipped))
        XCTAssertEqual(files(unzipped).count, 7)
        let other = folder.file("other")
        XCTAssertEqual(try ReceiptBinary.run(["--vault", other, "init"]).status, 0)
        let r = try ReceiptBinary.run(["--vault", other, "import", "--manifest", unzipped + "/manifest.csv"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(try withoutReadings(ReceiptBinary.run(["--vault", other, "list", "--json"]).stdout),
                       try withoutReadings(receipt("list", "--json").stdout))
    }

    func testFiltersSelectByZoneAndDate() throws {
        _ = try fillVault()
        let dest = folder.file("year")
        let out = try XCTUnwrap(try json("export", dest, "--from", "2025-01-01", "--to", "2025-12-31") as? [String: Any])
        XCTAssertEqual(out["receipts"] as? Int, 2)
        XCTAssertEqual(files(dest).filter { $0.hasPrefix("2025/") }.count, 3)
        XCTAssertFalse(files(dest).contains { $0.hasPrefix("2024/") || $0.hasPrefix("undated/") })
        try assertRefused(["export", folder.file("x"), "--zone", "nope"], mentioning: "no zone 'nope'")
        try assertRefused(["export", folder.file("y"), "--from", "2025-02-30"], mentioning: "invalid date '2025-02-30'")
    }

    func testANonEmptyFolderOrAnExistingZipIsRefusedAndNothingIsWritten() throws {
        _ = try fillVault()
        try folder.write("busy/keep.txt", "mine")
        try assertRefused(["export", folder.file("busy")], mentioning: "is not empty")
        XCTAssertEqual(files(folder.file("busy")), ["keep.txt"])
        try folder.write("old.zip", "not a zip")
        try assertRefused(["export", folder.file("old.zip"), "--zip"], mentioning: "already exists")
        XCTAssertEqual(try String(contentsOfFile: folder.file("old.zip"), encoding: .utf8), "not a zip")
        try assertRefused(["export", folder.file("a-file"), "--zip"], mentioning: ".zip file")
        try assertRefused(["export", vault + "/exported"], mentioning: "inside the vault")
        XCTAssertFalse(FileManager.default.fileExists(atPath: vault + "/exported"))
        try folder.write("plain", "x")
        try assertRefused(["export", folder.file("plain")], mentioning: "not a folder")
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder.file("a-file")))
        // An empty folder is fine.
        try FileManager.default.createDirectory(atPath: folder.file("empty"), withIntermediateDirectories: false)
        XCTAssertEqual(try receipt("export", folder.file("empty")).status, 0)
    }

    func testAMissingOrCorruptBlobIsReportedTheRestIsExportedExitOne() throws {
        let ids = try fillVault()
        let sha = TestData.sha256([0xFF, 0xD8, 0xFF] + TestData.random(400_000, seed: 3))
        let path = vault + "/blobs/" + sha.prefix(2) + "/" + sha
        var stored = try Data(contentsOf: URL(fileURLWithPath: path))
        stored[100] ^= 1
        try stored.write(to: URL(fileURLWithPath: path))
        for zip in [false, true] {
            let dest = folder.file(zip ? "broken.zip" : "broken")
            let r = try receipt(["export", dest, "--json"] + (zip ? ["--zip"] : []))
            XCTAssertEqual(r.status, 1, r.stderr)
            XCTAssertTrue(r.stderr.contains("receipt \(ids[3])") && r.stderr.contains(sha), r.stderr)
            let out = try XCTUnwrap(JSONSerialization.jsonObject(with: r.stdoutData) as? [String: Any])
            let failed = try XCTUnwrap(out["failed"] as? [[String: Any]])
            XCTAssertEqual(failed.count, 1)
            XCTAssertEqual(failed.first?["receipt"] as? String, ids[3])
            XCTAssertEqual(failed.first?["sha256"] as? String, sha)
            XCTAssertEqual((out["files"] as? [Any])?.count, 4)
        }
        XCTAssertFalse(files(folder.file("broken")).contains { $0.hasPrefix("2024/") }, "corrupt bytes never exported")
        // The manifest still imports: the receipt comes back without the bad file.
        let other = folder.file("other")
        XCTAssertEqual(try ReceiptBinary.run(["--vault", other, "init"]).status, 0)
        let r = try ReceiptBinary.run(["--vault", other, "import", "--manifest", folder.file("broken/manifest.csv")])
        XCTAssertEqual(r.status, 0, r.stderr)
        let stats = try ReceiptBinary.run(["--vault", other, "stats", "--json"])
        let counts = try XCTUnwrap(JSONSerialization.jsonObject(with: stats.stdoutData) as? [String: Any])
        XCTAssertEqual(counts["receipts"] as? Int, 4)
        XCTAssertEqual(counts["attachments"] as? Int, 4)
        // A blob file gone entirely.
        try FileManager.default.removeItem(atPath: path)
        let gone = try receipt("export", folder.file("gone"))
        XCTAssertEqual(gone.status, 1)
        XCTAssertTrue(gone.stderr.contains("blob \(sha) is missing"), gone.stderr)
        // Export creates each file before its copy starts: the missing blob's file is removed again.
        XCTAssertEqual(files(folder.file("gone")), files(folder.file("broken")))
    }

    /// More files than export creates ahead of its copies (64), most in one folder (undated), the rest
    /// across months: every file arrives whole, under its name, and nothing else is there.
    func testManyFilesInOneFolderAndAcrossFoldersAllArriveWhole() throws {
        var expected: [String: String] = [:]  // sha256 → content marker
        for i in 0..<150 {
            let bytes = Array("undated receipt \(i)\n".utf8) + TestData.random(i * 97 % 3000, seed: UInt64(i))
            let path = try folder.write("in/bulk/r\(i).txt", bytes)
            expected[TestData.sha256(bytes)] = path
        }
        XCTAssertEqual(try receipt("import", folder.file("in/bulk")).status, 0)
        for month in 1...3 {
            for i in 0..<10 {
                let bytes = TestData.random(200_000 + i, seed: UInt64(1000 * month + i))  // external blobs
                let id = try importFile("m\(month)-\(i).bin", bytes, "--date", "2025-0\(month)-1\(i)")
                XCTAssertFalse(id.isEmpty)
                expected[TestData.sha256(bytes)] = "m\(month)-\(i)"
            }
        }
        let dest = folder.file("many")
        let r = try receipt("export", dest)
        XCTAssertEqual(r.status, 0, r.stderr)
        let exported = files(dest).filter { $0 != "manifest.csv" && $0 != "receipts.json" }
        XCTAssertEqual(exported.count, 180)
        XCTAssertEqual(Set(exported.map { $0.split(separator: "/").first.map(String.init) ?? "" }),
                       ["undated", "2025"])
        // Each name holds the bytes its manifest row names (no metadata here holds a comma or a quote).
        let rows = try String(contentsOfFile: dest + "/manifest.csv", encoding: .utf8)
            .split(whereSeparator: \.isNewline).map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        let header = try XCTUnwrap(rows.first)
        let pathColumn = try XCTUnwrap(header.firstIndex(of: "path"))
        let shaColumn = try XCTUnwrap(header.firstIndex(of: "sha256"))
        var named: [String: String] = [:]
        for row in rows.dropFirst() { named[row[pathColumn]] = row[shaColumn] }
        XCTAssertEqual(Set(named.keys), Set(exported))
        var seen: Set<String> = []
        for name in exported {
            let sha = TestData.sha256([UInt8](try Data(contentsOf: URL(fileURLWithPath: dest + "/" + name))))
            XCTAssertEqual(sha, named[name], name)
            seen.insert(sha)
        }
        XCTAssertEqual(seen, Set(expected.keys), "every exported file is one imported, byte for byte")
    }
}
