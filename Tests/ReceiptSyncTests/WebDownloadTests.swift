import Foundation
import ReceiptServer
import TestSupport
import XCTest

/// "Download these" (issue #32): the list's filter as a zip, or as a claim package in exactly the
/// layout of `receipt export --for claim --zip`, for any member who can read the zone.
class WebDownloadTests: HouseholdTestCase {
    func testAClaimPackageDownloadedFromTheListIsTheCommandLinesPackageAndItsSumsVerify() async throws {
        let h = try await Household.start(["alice", "bob"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"]
        try await alice.ok(["share", "personal", "bob", "--role", "read"])
        for (n, (merchant, date)) in [("CVS Pharmacy", "2025-03-04"), ("Dentist", "2025-01-20"), ("Optician", nil),
                                      ("Bakery", "2025-02-01")].enumerated() {
            let file = try h.file("r\(n).pdf", size: 3000 + n, seed: UInt64(n + 1))
            try await alice.ok(["import", file.path, "--merchant", merchant, "--total", "1\(n).50", "--currency", "EUR",
                                "--category", merchant == "Bakery" ? "food" : "health"] + (date.map { ["--date", $0] } ?? []))
        }
        _ = try await alice.sync()

        var web = try await browser(h, signedInAs: "bob")
        let list = try await web.get("/z/alice/personal?category=health")
        let link = try XCTUnwrap(Self.link(in: list.body, named: "claim package"), list.body)
        XCTAssertEqual(link, "/z/alice/personal/download?category=health&amp;as=claim")

        let answer = try await web.get(link.replacingOccurrences(of: "&amp;", with: "&"))
        checkEqual(answer.status, 200, answer.body)
        XCTAssertEqual(answer.header("Content-Type"), "application/zip")
        XCTAssertEqual(answer.header("Content-Length"), String(answer.bytes.count))
        let downloaded = try h.folder.write("personal-claim.zip", answer.bytes)
        let fromWeb = try unzip(downloaded, into: h.folder.file("web"))
        let exported = h.folder.file("cli.zip")
        try await alice.ok(["export", exported, "--zip", "--for", "claim", "--category", "health"])
        let fromCLI = try unzip(exported, into: h.folder.file("cli"))
        XCTAssertEqual(fromWeb.keys.sorted(), ["001_2025-01-20_dentist.pdf", "002_2025-03-04_cvs-pharmacy.pdf",
                                               "003_undated_optician.pdf", "SHA256SUMS", "index.csv", "manifest.csv",
                                               "receipts.json", "summary.txt"])
        for (name, bytes) in fromCLI {
            XCTAssertEqual(fromWeb[name], bytes, "\(name) differs between the web's download and receipt export --for claim")
        }
        let verified = try ReceiptBinary.run(["-c", "--strict", "SHA256SUMS"], currentDirectory: h.folder.file("web"),
                                             executable: "/usr/bin/sha256sum")
        XCTAssertEqual(verified.status, 0, verified.stdout + verified.stderr)

        let zip = try await web.get("/z/alice/personal/download?as=zip&merchant=bakery")
        checkEqual(zip.status, 200, zip.body)
        let plain = try unzip(try h.folder.write("plain.zip", zip.bytes), into: h.folder.file("plain"))
        XCTAssertEqual(plain.keys.sorted().filter { $0.hasSuffix(".pdf") }.count, 1, "\(plain.keys.sorted())")
        XCTAssertNotNil(plain["manifest.csv"])

        let leftovers = try FileManager.default.contentsOfDirectory(atPath: h.server.data + "/downloads")
        XCTAssertEqual(leftovers, [], "a finished download leaves nothing in the data folder")

        let bad = try await web.get("/z/alice/personal/download?as=claim&from=2025-02-30")
        checkEqual(bad.status, 400, bad.body)
        XCTAssertTrue(bad.body.contains("2025-02-30"), bad.body)
    }

    /// A receipt read by one vault keeps its readings in the web's download: `receipts.json` is the
    /// vault export's, `filled` and `suggestions` included (real Tesseract on a Fixtures photo).
    func testADownloadListsWhatTheVaultReadAsItsExportDoes() async throws {
        let h = try await Household.start(["alice", "bob"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"]
        try await alice.ok(["config", "locale", "en-US"])
        try await alice.ok(["share", "personal", "bob", "--role", "read"])
        try await alice.ok(["import", ReadingSyncTests.photo])
        _ = try await alice.sync()

        var web = try await browser(h, signedInAs: "bob")
        let answer = try await web.get("/z/alice/personal/download?as=zip")
        checkEqual(answer.status, 200, answer.body)
        let fromWeb = try unzip(try h.folder.write("web.zip", answer.bytes), into: h.folder.file("web"))
        let exported = h.folder.file("cli.zip")
        try await alice.ok(["export", exported, "--zip", "--zone", "personal"])
        let fromCLI = try unzip(exported, into: h.folder.file("cli"))
        let listed = try XCTUnwrap(try JSONSerialization.jsonObject(with: XCTUnwrap(fromWeb["receipts.json"])) as? [[String: Any]])
        XCTAssertEqual(listed.first?["filled"] as? [String], ["currency", "date", "total"])
        XCTAssertNotNil((listed.first?["suggestions"] as? [String: Any])?["merchant"], "\(listed)")
        XCTAssertEqual(String(decoding: fromWeb["receipts.json"] ?? Data(), as: UTF8.self),
                       String(decoding: fromCLI["receipts.json"] ?? Data(), as: UTF8.self))
    }

    /// The `href` of the link whose text is `text`.
    static func link(in page: String, named text: String) -> String? {
        guard let end = page.range(of: "\">\(text)</a>") else { return nil }
        let before = page[..<end.lowerBound]
        guard let start = before.range(of: "href=\"", options: .backwards) else { return nil }
        return String(before[start.upperBound...])
    }

    /// Every file of the zip, by its path, as `unzip` writes them into `folder`.
    func unzip(_ zip: String, into folder: String) throws -> [String: Data] {
        let result = try ReceiptBinary.run(["-q", zip, "-d", folder], executable: "/usr/bin/unzip")
        XCTAssertEqual(result.status, 0, result.stderr)
        var files: [String: Data] = [:]
        for name in try FileManager.default.subpathsOfDirectory(atPath: folder) {
            var isFolder: ObjCBool = false
            let path = folder + "/" + name
            if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), !isFolder.boolValue {
                files[name] = FileManager.default.contents(atPath: path)
            }
        }
        return files
    }
}

/// The same over a server whose catalog is in PostgreSQL.
final class PostgresWebDownloadTests: WebDownloadTests {
    override class var postgres: Bool { true }

    /// (A test of its own also makes XCTest on Linux find the inherited ones.)
    func testAnOutsidersDownloadIsNotFound() async throws {
        let h = try await Household.start(["alice", "otto"])
        defer { Task { await h.shutdown() } }
        try await h["alice"].ok(["import", try h.file("a.pdf", size: 500, seed: 1).path, "--merchant", "Secret"])
        _ = try await h["alice"].sync()
        var web = try await browser(h, signedInAs: "otto")
        let answer = try await web.get("/z/alice/personal/download?as=claim")
        checkEqual(answer.status, 404, answer.body)
        XCTAssertFalse(answer.body.contains("Secret"), answer.body)
    }
}
