import BlobStore
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `receipt import --manifest FILE.csv`.
final class ManifestTests: CLITestCase {
    let idA = "1f2e3d4c-5b6a-4789-9abc-def012345678"
    let idB = "2a3b4c5d-6e7f-4a8b-9c0d-1e2f3a4b5c6d"

    /// Writes the sample files and a manifest under `m/`; returns the manifest's path.
    @discardableResult
    func manifest(_ text: String, name: String = "manifest.csv") throws -> String {
        try folder.write("m/docs/receipt.pdf", Samples.pdf)
        try folder.write("m/docs/photo.jpg", Samples.jpeg)
        try folder.write("m/scan.png", Samples.png)
        try folder.write("m/till.txt", Samples.text)
        return try folder.write("m/" + name, text)
    }

    func testQuotedFieldsMultiRowReceiptsAndColumnsInAnyOrder() throws {
        let path = try manifest("""
            merchant,tags,path,date,total,currency,id,category,note,zone
            "Acme, Inc.",tax;home,docs/receipt.pdf,2025-03-04,12.34,usd,\(idA),"tools, hardware","said ""thanks""
            second line",personal
            ,,docs/photo.jpg,,,,\(idA),,,
            Bakery,,scan.png,2025-01-02,3,EUR,,food,,

            """)
        let out = try XCTUnwrap(try json("import", "--manifest", path) as? [String: Any])
        let imported = try XCTUnwrap(out["imported"] as? [[String: Any]])
        XCTAssertEqual(imported.count, 3)
        XCTAssertEqual(Set(imported[0].keys), ["id", "path", "sha256", "size", "deduplicated", "existing"])
        XCTAssertEqual(imported.map { $0["path"] as? String }, ["docs/receipt.pdf", "docs/photo.jpg", "scan.png"])
        let receipts = try list()
        XCTAssertEqual(receipts.count, 2)
        let bakery = receipts[0], acme = receipts[1]
        XCTAssertEqual(acme["id"] as? String, idA)
        XCTAssertEqual(acme["merchant"] as? String, "Acme, Inc.")
        XCTAssertEqual(acme["category"] as? String, "tools, hardware")
        XCTAssertEqual(acme["note"] as? String, "said \"thanks\"\nsecond line")
        XCTAssertEqual(acme["currency"] as? String, "USD")
        XCTAssertEqual(acme["tags"] as? [String], ["tax", "home"])
        let files = try XCTUnwrap(acme["attachments"] as? [[String: Any]])
        XCTAssertEqual(files.map { $0["filename"] as? String }, ["receipt.pdf", "photo.jpg"])
        XCTAssertEqual(files.map { $0["mediaType"] as? String }, ["application/pdf", "image/jpeg"])
        XCTAssertEqual(bakery["merchant"] as? String, "Bakery")
        XCTAssertTrue(bakery["note"] is NSNull)
        XCTAssertEqual((bakery["id"] as? String)?.count, 36)
    }

    /// Metadata is held between the passes with its lengths in 7-bit groups: values whose length takes
    /// one, two and three of them come back whole.
    func testLongMetadataValuesSurviveThePlanWhole() throws {
        let merchant = String(repeating: "m", count: 127)
        let note = String(repeating: "é", count: 64)  // 128 bytes
        let category = String(repeating: "c", count: 4096)
        let tags = (0..<5).map { String(repeating: Character(UnicodeScalar(UInt8(97 + $0))), count: 4000) }
        let path = try manifest("""
            path,id,merchant,note,category,tags
            docs/receipt.pdf,\(idA),\(merchant),\(note),\(category),
            scan.png,\(idB),,\(String(repeating: "n", count: 4096)),,\(tags.joined(separator: ";"))

            """)
        XCTAssertEqual(try receipt("import", "--manifest", path).status, 0)
        let byID = Dictionary(uniqueKeysWithValues: try list().map { ($0["id"] as? String ?? "", $0) })
        XCTAssertEqual(byID[idA]?["merchant"] as? String, merchant)
        XCTAssertEqual(byID[idA]?["note"] as? String, note)
        XCTAssertEqual(byID[idA]?["category"] as? String, category)
        XCTAssertEqual(byID[idB]?["tags"] as? [String], tags)
        XCTAssertEqual(byID[idB]?["note"] as? String, String(repeating: "n", count: 4096))
    }

    func testReimportIsIdempotentAndAnExistingIdIsUpdated() throws {
        let path = try manifest("""
            path,id,merchant,total,sha256
            docs/receipt.pdf,\(idA),Acme,1.00,\(TestData.sha256(Samples.pdf))
            docs/photo.jpg,\(idA),,,
            till.txt,,Corner shop,,

            """)
        XCTAssertEqual(try receipt("import", "--manifest", path).status, 0)
        let first = try state()
        let again = try XCTUnwrap(try json("import", "--manifest", path) as? [String: Any])
        let imported = try XCTUnwrap(again["imported"] as? [[String: Any]])
        XCTAssertEqual(imported.compactMap { $0["existing"] as? Bool }, [true, true, true])
        XCTAssertEqual(try state(), first, "a second import changes nothing")
        // Same id, new metadata and one more file: the receipt is updated, not duplicated.
        try manifest("""
            path,id,merchant,total
            docs/receipt.pdf,\(idA),Acme Corp,2.50
            scan.png,\(idA),,

            """)
        XCTAssertEqual(try receipt("import", "--manifest", path).status, 0)
        let receipts = try list()
        XCTAssertEqual(receipts.count, 2)
        let acme = try XCTUnwrap(receipts.first { $0["id"] as? String == idA })
        XCTAssertEqual(acme["merchant"] as? String, "Acme Corp")
        XCTAssertEqual(acme["total"] as? String, "2.50")
        XCTAssertEqual((acme["attachments"] as? [[String: Any]])?.compactMap { $0["filename"] as? String },
                       ["receipt.pdf", "photo.jpg", "scan.png"])
    }

    func testEveryBadRowIsReportedWithItsLineAndNothingIsImported() throws {
        try folder.write("outside.pdf", Samples.pdf)
        XCTAssertEqual(mkfifo(folder.file("fifo"), 0o644), 0)
        let path = try manifest("""
            path,id,date,total,currency,sha256,merchant
            docs/receipt.pdf,,2025-03-04,12.34,EUR,,"fine, multi
            line"
            missing.pdf,,,,,,
            till.txt,,2025-02-30,,,,
            till.txt,,,"12,3,4",,,
            till.txt,,,1e9,,,
            till.txt,,,,EURO,,
            till.txt,,,,,\(String(repeating: "0", count: 64)),
            ../outside.pdf,,,,,,
            /etc/hostname,,,,,,
            link.txt,,,,,,
            docs/../../outside.pdf,,,,,,
            till.txt,not-a-uuid,,,,,
            docs,,,,,,
            fifo-link,,,,,,
            scan.png,,,,,,
            ,,,,,,merchant only
            ../\u{301}outside.pdf,,,,,,

            """)
        XCTAssertEqual(symlink("../outside.pdf", folder.file("m/link.txt")), 0)
        XCTAssertEqual(symlink("../fifo", folder.file("m/fifo-link")), 0)
        XCTAssertEqual(mkfifo(folder.file("m/pipe"), 0o644), 0)
        let before = try state()
        let r = try receipt("import", "--manifest", path)
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.stdout.isEmpty)
        XCTAssertEqual(try state(), before, "nothing imported")
        let lines = r.stderr.split(separator: "\n").map(String.init)
        let expected: [(Int, String)] = [
            (4, "no such file: missing.pdf"),
            (5, "invalid date '2025-02-30'"),
            (6, "invalid total '12,3,4'"),
            (7, "invalid total '1e9'"),
            (8, "unknown currency 'EURO'"),
            (9, "sha256 mismatch"),
            (10, "leaves the manifest's folder"),
            (11, "is absolute"),
            (12, "leads outside the manifest's folder"),
            (13, "leaves the manifest's folder"),
            (14, "invalid id 'not-a-uuid'"),
            (15, "is a folder"),
            (16, "leads outside the manifest's folder"),
            (18, "path is empty"),
            (19, "leaves the manifest's folder"),  // a combining mark after '/' hides '..' from String.split
        ]
        XCTAssertEqual(lines.count, expected.count, r.stderr)
        for (line, text) in expected {
            XCTAssertTrue(lines.contains { $0.hasPrefix("receipt: \(path):\(line): ") && $0.contains(text) },
                          "no line \(line) mentioning \(text) in:\n\(r.stderr)")
        }
    }

    func testAFIFOInsideTheFolderIsRefusedWithoutHanging() throws {
        let path = try manifest("path\npipe\n")
        XCTAssertEqual(mkfifo(folder.file("m/pipe"), 0o644), 0)
        try assertRefused(["import", "--manifest", path], mentioning: ":2: pipe is not a regular file")
    }

    func testHeaderProblems() throws {
        try assertRefused(["import", "--manifest", try manifest("path,merchnat\na.pdf,x\n")],
                          mentioning: ":1: unknown column 'merchnat'")
        try assertRefused(["import", "--manifest", try manifest("merchant,date\nx,2025-01-01\n")],
                          mentioning: ":1: the header has no 'path' column")
        try assertRefused(["import", "--manifest", try manifest("path,path\na,b\n")],
                          mentioning: ":1: column 'path' appears twice")
        try assertRefused(["import", "--manifest", try manifest("")], mentioning: "is empty")
        try assertRefused(["import", "--manifest", folder.file("m/none.csv")], mentioning: "no such file")
        try assertRefused(["import", "--manifest", try manifest("path\ntill.txt,extra\n")],
                          mentioning: ":2: has 2 fields, the header has 1")
        let invalid = folder.file("m/latin1.csv")
        try Data([0x70, 0x61, 0x74, 0x68, 0x0A, 0xE9, 0xFF, 0x0A]).write(to: URL(fileURLWithPath: invalid))
        try assertRefused(["import", "--manifest", invalid], mentioning: "not valid UTF-8")
        // Inside a row too (CSV.swift ended the row there and went on without a word), on its line.
        try Data(Array("path,merchant\ntill.txt,ok\ntill.txt,Caf".utf8) + [0xE9] + Array("\n".utf8))
            .write(to: URL(fileURLWithPath: invalid))
        try assertRefused(["import", "--manifest", invalid], mentioning: "near line 3: it is not valid UTF-8 text")
    }

    func testARowWithSeveralProblemsIsOneLine() throws {
        let path = try manifest("path,date,total\nmissing.pdf,2025-02-30,1e9\ntill.txt,2025-01-01,1\n")
        try assertRefused(["import", "--manifest", path],
                          mentioning: ":2: invalid date '2025-02-30': no such day; invalid total '1e9'")
    }

    func testNULBytesInAManifestAreRefusedClearly() throws {
        let path = try manifest("path,merchant\ntill.txt,\"Ac\u{0}me\"\n")
        try assertRefused(["import", "--manifest", path], mentioning: ":2: merchant contains a NUL byte")
    }

    func testConflictingMetadataForOneIdIsABadRow() throws {
        let path = try manifest("""
            path,id,merchant
            docs/receipt.pdf,\(idA),Acme
            docs/photo.jpg,\(idA),Other

            """)
        try assertRefused(["import", "--manifest", path], mentioning: ":3: merchant 'Other' differs from 'Acme'")
    }

    /// A manifest saved as "CSV UTF-8" by a spreadsheet starts with a byte-order mark, its header
    /// quoted or not.
    func testAByteOrderMarkBeforeTheHeaderIsIgnored() throws {
        for header in ["\"path\",\"merchant\"", "path,merchant"] {
            let path = try manifest("\u{FEFF}" + header + "\ntill.txt,Corner Shop\n", name: "bom.csv")
            let r = try receipt("import", "--manifest", path, "--no-index")
            XCTAssertEqual(r.status, 0, r.stderr)
        }
        XCTAssertEqual(try list().compactMap { $0["merchant"] as? String }, ["Corner Shop"])
    }

    func testCRLFLineEndingsAndLineNumbersAfterQuotedNewlines() throws {
        let path = try manifest("path,note\r\ntill.txt,\"a\r\nb\r\nc\"\r\nmissing.pdf,x\r\n")
        try assertRefused(["import", "--manifest", path], mentioning: ":5: no such file: missing.pdf")
    }

    func testZonesFromTheManifestOrTheOption() throws {
        let path = try manifest("path,zone\ntill.txt,work\nscan.png,\n")
        let out = try XCTUnwrap(try json("import", "--manifest", path, "--zone", "personal") as? [String: Any])
        XCTAssertEqual((out["imported"] as? [Any])?.count, 2)
        XCTAssertEqual(Set(try list().compactMap { $0["zone"] as? String }), ["work", "personal"])
        try assertRefused(["import", "--manifest", try manifest("path,zone\ntill.txt,bad zone\n")],
                          mentioning: ":2: invalid zone name 'bad zone'")
        try assertRefused(["import", "--manifest", try manifest("path,zone\ntill.txt,alice/shared\n")],
                          mentioning: ":2: no zone 'alice/shared'")
    }

    func testTheFixturesImportAsTheQuickStartShowsThem() throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures").path
        let r = try receipt("import", "--manifest", fixtures + "/manifest.csv")
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stderr, "imported 6 receipt(s) with 7 file(s)\nindexed the text of 7 file(s)\n")
        let receipts = try list()
        XCTAssertEqual(receipts.count, 6)
        var types: [String: String] = [:]
        for receipt in receipts {
            for a in receipt["attachments"] as? [[String: Any]] ?? [] {
                types[a["filename"] as? String ?? ""] = a["mediaType"] as? String
            }
        }
        XCTAssertEqual(types, ["acme-hardware.pdf": "application/pdf", "hotel-invoice.pdf": "application/pdf",
                               "corner-bakery.jpg": "image/jpeg", "hotel-receipt-photo.jpg": "image/jpeg",
                               "pharmacy.png": "image/png", "warranty-card.png": "image/png", "city-cab.txt": "text/plain"])
        let acme = try XCTUnwrap(receipts.first { $0["id"] as? String == "6b1f0c52-3f4e-4d8a-9a51-0c2d7e4b9a10" })
        XCTAssertEqual(acme["merchant"] as? String, "Acme Hardware, Inc.")
        XCTAssertEqual(acme["note"] as? String, "Drill for the \"new\" shelf")
        XCTAssertEqual(acme["category"] as? String, "home, garden")
        let hotel = try XCTUnwrap(receipts.first { $0["merchant"] as? String == "Hotel Seaside" })
        XCTAssertEqual((hotel["attachments"] as? [Any])?.count, 2)
        XCTAssertTrue(receipts.last?["date"] is NSNull, "the undated warranty card lists last")
        // The whole fixture set stays small.
        let size = try FileManager.default.subpathsOfDirectory(atPath: fixtures).reduce(0) { total, rel in
            total + ((try? FileManager.default.attributesOfItem(atPath: fixtures + "/" + rel)[.size] as? Int) ?? 0)
        }
        XCTAssertLessThan(size, 1_000_000)
    }

    /// A batch's rows are written in receipt-id order when no row can see another's attachments (see
    /// "Manifest import" in docs/DESIGN.md): the report, the attachments' order and which row is the
    /// first with a blob stay those of the manifest.
    func testRowsOutOfIdOrderKeepManifestOrderInReportAndAttachments() throws {
        let idC = "0c0c0c0c-0c0c-4c0c-8c0c-0c0c0c0c0c0c"
        try folder.write("m/copy.txt", Samples.text)
        let path = try manifest("""
            path,id
            docs/receipt.pdf,\(idB)
            till.txt,\(idA)
            scan.png,\(idB)
            docs/photo.jpg,\(idA)
            copy.txt,\(idC)

            """)
        let out = try XCTUnwrap(try json("import", "--manifest", path) as? [String: Any])
        let imported = try XCTUnwrap(out["imported"] as? [[String: Any]])
        XCTAssertEqual(imported.compactMap { $0["path"] as? String },
                       ["docs/receipt.pdf", "till.txt", "scan.png", "docs/photo.jpg", "copy.txt"])
        XCTAssertEqual(imported.compactMap { $0["deduplicated"] as? Bool }, [false, false, false, false, true])
        XCTAssertEqual(imported.compactMap { $0["id"] as? String }, [idB, idA, idB, idA, idC])
        let receipts = try list()
        func files(_ id: String) -> [String] {
            let r = receipts.first { $0["id"] as? String == id }
            return (r?["attachments"] as? [[String: Any]])?.compactMap { $0["filename"] as? String } ?? []
        }
        XCTAssertEqual(files(idA), ["till.txt", "photo.jpg"])
        XCTAssertEqual(files(idB), ["receipt.pdf", "scan.png"])
        XCTAssertEqual(files(idC), ["copy.txt"])
        // The text output lists the same rows, in the same order, as each batch commits.
        try folder.write("m/more.txt", Array("more".utf8))
        let text = try receipt("import", "--manifest", try manifest("path,id\nmore.txt,\(idC)\ntill.txt,\(idB)\n"))
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertEqual(text.stdout, "0c0c0c0c  more.txt\n2a3b4c5d  till.txt  (content already stored)\n")
        XCTAssertEqual(text.stderr, "imported 2 receipt(s)\nindexed the text of 1 file(s)\n")
    }

    /// A row without an id whose file (name and content) another row of the same batch files first is
    /// reported as `existing`, held by that row's receipt: such batches are written in manifest order.
    func testARowWithoutIdSeesTheReceiptAnEarlierRowFiledItsFileIn() throws {
        let path = try manifest("""
            path,id
            till.txt,\(idB)
            scan.png,\(idA)
            till.txt,

            """)
        let out = try XCTUnwrap(try json("import", "--manifest", path) as? [String: Any])
        let imported = try XCTUnwrap(out["imported"] as? [[String: Any]])
        XCTAssertEqual(imported.compactMap { $0["existing"] as? Bool }, [false, false, true])
        XCTAssertEqual(imported.compactMap { $0["id"] as? String }, [idB, idA, idB])
        XCTAssertEqual(try list().count, 2)
    }

    /// An empty file is an empty inline blob (bound as such, not as NULL), read back and verified.
    func testAnEmptyFileImportsAsAnEmptyBlob() throws {
        try folder.write("m/empty.txt", [UInt8]())
        let path = try manifest("path,merchant\nempty.txt,Nobody\ntill.txt,Corner\n")
        XCTAssertEqual(try receipt("import", "--manifest", path).status, 0)
        let cat = try receipt("cat", TestData.sha256([]))
        XCTAssertEqual(cat.status, 0, cat.stderr)
        XCTAssertTrue(cat.stdout.isEmpty)
        XCTAssertEqual(try receipt("fsck").status, 0)
    }

    func testManifestAndPathsOrMetadataTogetherAreRefused() throws {
        let path = try manifest("path\ntill.txt\n")
        try assertRefused(["import", "--manifest", path, folder.file("m/till.txt")], mentioning: "not both", status: 64)
        try assertRefused(["import", "--manifest", path, "--merchant", "x"], mentioning: "do not apply", status: 64)
    }
}
