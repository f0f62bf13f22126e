import AsyncHTTPClient
import BlobStore
import Foundation
import NIOCore
import ReceiptText
import ReceiptWire
import TestSupport
import XCTest

/// Extracted text through sync: a member that extracted a blob's text gives it to the server, and
/// the members who pull the blob take the text instead of extracting it again; only readers of a
/// zone referencing the blob may store or read its text. And the protocol revision exchange.
class TextSyncTests: HouseholdTestCase {
    func testTextExtractedByOneMemberIsPulledByTheOthersAndNeverExtractedTwice() async throws {
        let h = try await Household.start(["alice", "bob", "carol", "mallory"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"], bob = h["bob"], carol = h["carol"], mallory = h["mallory"]
        let bytes = Array("CVS PHARMACY\namoxicillin 500mg\nTOTAL 23.45\n".utf8)
        let path = try h.folder.write("files/pharmacy.txt", bytes)
        let sha = SHA256Hasher.hash(bytes).hex
        try await alice.ok(["zone", "create", "household"])
        try await alice.ok(["import", path, "--zone", "household", "--merchant", "CVS", "--no-index"])
        try await alice.ok(["share", "household", "bob", "--role", "read"])
        try await alice.ok(["share", "household", "carol", "--role", "write"])
        // Not extracted yet anywhere: nothing travels, carol's copy stays pending.
        checkEqual(try await alice.sync()["textsUploaded"] as? Int, 0)
        checkEqual(try await carol.sync()["textsDownloaded"] as? Int, 0)

        // Alice extracts it; her next sync gives the text to the server.
        checkEqual(try await indexed(alice)["extracted"] as? Int, 1)
        checkEqual(try await alice.sync()["textsUploaded"] as? Int, 1)
        checkEqual(try await alice.sync()["textsUploaded"] as? Int, 0, "a text the server has is not sent again")

        // Bob pulls the receipt with its text: `index` finds nothing to extract, search finds the word.
        let bobSync = try await bob.sync()
        checkEqual(bobSync["pulled"] as? Int, 1)
        checkEqual(bobSync["textsDownloaded"] as? Int, 1)
        let bobIndex = try await indexed(bob)
        checkEqual(bobIndex["extracted"] as? Int, 0, "bob extracted a text the household already had")
        checkEqual(bobIndex["pending"] as? Int, 0)
        let found = try await bob.ok(["search", "amoxicillin", "--json"]).json as? [[String: Any]]
        checkEqual(found?.count, 1, "\(String(describing: found))")
        // Carol, who pulled the blob before the text existed, takes it at her next sync.
        checkEqual(try await carol.sync()["textsDownloaded"] as? Int, 1)
        checkEqual(try await indexed(carol)["extracted"] as? Int, 0)

        // Mallory reads no zone referencing the blob: its text is as invisible as its bytes.
        _ = try await mallory.sync()
        let version = TextExtractor.version
        let asked = try await h.raw.json(.POST, "/v1/text/fetch", token: mallory.token, WireTextRequest(version: version, blobs: [sha]))
        checkEqual(asked.status, 200)
        checkEqual(try JSONDecoder().decode(WireTextFetchResponse.self, from: Data(asked.body)).texts, [])
        let wanted = try await h.raw.json(.POST, "/v1/text/want", token: mallory.token, WireTextRequest(version: version, blobs: [sha]))
        checkEqual(try JSONDecoder().decode(WireWantResponse.self, from: Data(wanted.body)).want, [])
        let forged = try await h.raw.json(.PUT, "/v1/text/\(sha)/\(version)", token: mallory.token,
                                          WireText(text: "forged", failed: nil))
        checkEqual(forged.status, 404, forged.text)
        // A version the server does not keep is refused whoever asks (TextOwnersAndQuotaTests).
        let forgedNew = try await h.raw.json(.PUT, "/v1/text/\(sha)/99", token: mallory.token, WireText(text: "forged", failed: nil))
        checkEqual(forgedNew.status, 400, forgedNew.text)
        // A reader may not replace the text the household has.
        let replaced = try await h.raw.json(.PUT, "/v1/text/\(sha)/\(version)", token: bob.token, WireText(text: "replaced", failed: nil))
        checkEqual(replaced.status, 204, replaced.text)
        let kept = try await h.raw.json(.POST, "/v1/text/fetch", token: bob.token, WireTextRequest(version: version, blobs: [sha]))
        let texts = try JSONDecoder().decode(WireTextFetchResponse.self, from: Data(kept.body)).texts
        checkEqual(texts.count, 1)
        checkTrue(texts.first?.text?.contains("amoxicillin") == true, "\(texts)")
        // Bad bodies: both fields, or neither.
        checkEqual(try await h.raw.json(.PUT, "/v1/text/\(sha)/\(version)", token: bob.token,
                                        WireText(text: "a", failed: "b")).status, 400)
        checkEqual(try await h.raw.call(.PUT, "/v1/text/\(sha)/-1", token: bob.token, body: Array("{\"text\":\"a\"}".utf8)).status, 400)
    }

    /// `POST /v1/text/put` is checked whole before anything is kept: a bad entry, too many texts or
    /// too many bytes together refuse the upload (400, 413) and keep none of it. One text alone may
    /// be larger than an upload of many. A blob the caller cannot read is answered as refused.
    func testAnUploadOfManyIsCheckedWholeBeforeAnythingIsKept() async throws {
        let h = try await Household.start(["alice", "mallory"])
        defer { Task { await h.shutdown() } }
        let alice = h["alice"]
        var shas: [String] = []
        for i in 0..<3 {
            let bytes = Array("receipt \(i)\n".utf8)
            try await alice.ok(["import", try h.folder.write("files/r\(i).txt", bytes), "--no-index"])
            shas.append(SHA256Hasher.hash(bytes).hex)
        }
        checkEqual(try await alice.sync()["pushed"] as? Int, 3)
        let version = TextExtractor.version
        func put(_ texts: [WireText], as token: String? = nil) async throws -> (status: Int, text: String) {
            let answer = try await h.raw.json(.POST, "/v1/text/put", token: token ?? alice.token,
                                              WireTextPut(version: version, texts: texts))
            return (answer.status, answer.text)
        }
        func kept() async throws -> [WireText] {
            let answer = try await h.raw.json(.POST, "/v1/text/fetch", token: alice.token, WireTextRequest(version: version, blobs: shas))
            return try JSONDecoder().decode(WireTextFetchResponse.self, from: Data(answer.body)).texts
        }
        let good = WireText(sha256: shas[0], text: "kept", failed: nil)
        let bad = [("both fields", WireText(sha256: shas[1], text: "a", failed: "b"), 400),
                   ("no address", WireText(sha256: nil, text: "a", failed: nil), 400),
                   ("not an address", WireText(sha256: "ABC", text: "a", failed: nil), 400),
                   ("a NUL", WireText(sha256: shas[1], text: "a\u{0}b", failed: nil), 400)]
        for (what, entry, status) in bad {
            let answer = try await put([good, entry])
            checkEqual(answer.status, status, "\(what): \(answer.text)")
            checkTrue(answer.text.contains("error"), answer.text)
        }
        checkEqual(try await put(Array(repeating: good, count: WireTextPut.maxTexts + 1)).status, 413)
        let half = String(repeating: "x", count: WireTextPut.maxBatchBytes / 2 + 1)
        checkEqual(try await put([WireText(sha256: shas[0], text: half, failed: nil), WireText(sha256: shas[1], text: half, failed: nil)]).status, 413)
        let badVersion = try await h.raw.call(.POST, "/v1/text/put", token: alice.token,
                                              body: Array("{\"version\":\"-1\",\"texts\":[]}".utf8))
        checkEqual(badVersion.status, 400)
        checkEqual(try await kept(), [], "a refused upload kept a text")

        // Mallory reads none of these blobs: refused by address, nothing kept, the upload is not an error.
        let forged = try await put([good], as: h["mallory"].token)
        checkEqual(forged.status, 200, forged.text)
        checkEqual(try JSONDecoder().decode(WireTextPutResponse.self, from: Data(forged.text.utf8)).refused, [shas[0]])
        checkEqual(try await kept(), [])
        // One text alone may be larger than an upload of many.
        let large = String(repeating: "y", count: WireTextPut.maxBatchBytes + 100)
        let alone = try await put([WireText(sha256: shas[2], text: large, failed: nil)])
        checkEqual(alone.status, 200, alone.text)
        let both = try await put([good, WireText(sha256: shas[1], text: nil, failed: "tesseract crashed")])
        checkEqual(both.status, 200, both.text)
        checkEqual(try JSONDecoder().decode(WireTextPutResponse.self, from: Data(both.text.utf8)).refused, [])
        checkEqual(try await kept().map(\.sha256), shas)
    }

    func testRevisionsAreExchangedAndAnOldClientIsToldToUpgrade() async throws {
        let h = try await Household.start(["alice"])
        defer { Task { await h.shutdown() } }
        for (sent, status) in [("1", 426), ("x", 426), (String(WireProtocol.revision), 200), ("2", 200)] {
            var request = HTTPClientRequest(url: h.server.url + "/v1/account")
            request.headers.add(name: "Authorization", value: "Bearer \(h["alice"].token)")
            request.headers.add(name: WireProtocol.revisionHeader, value: sent)
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            let body = String(buffer: try await response.body.collect(upTo: 1 << 20))
            XCTAssertEqual(Int(response.status.code), status, "revision \(sent): \(body)")
            if status == 426 {
                XCTAssertTrue(body.contains("upgrade receipt"), body)
            } else {
                XCTAssertEqual(response.headers.first(name: WireProtocol.revisionHeader), String(WireProtocol.revision))
                let account = try JSONDecoder().decode(WireAccount.self, from: Data(body.utf8))
                XCTAssertEqual(account.revision, WireProtocol.revision)
            }
        }
        // A client of before the exchange sends no revision: it is served (revision 2).
        checkEqual(try await h.raw.call(.GET, "/v1/account", token: h["alice"].token).status, 200)
    }

    func indexed(_ member: Member) async throws -> [String: Any] {
        try await member.ok(["index", "--json"]).json as? [String: Any] ?? [:]
    }
}

/// The same with the server's catalog in PostgreSQL.
final class PostgresTextSyncTests: TextSyncTests {
    override class var postgres: Bool { true }

    /// (A test of its own also makes XCTest on Linux find the inherited ones.)
    func testTheTextIsKeptInPostgreSQLByBlobAndVersion() async throws {
        let h = try await Household.start(["alice"])
        defer { Task { await h.shutdown() } }
        let path = try h.folder.write("files/a.txt", Array("hardware store receipt\n".utf8))
        try await h["alice"].ok(["import", path])
        checkEqual(try await h["alice"].sync()["textsUploaded"] as? Int, 1)
        let url = try XCTUnwrap(Household.database)
        let rows = try PostgresCluster.shared().psql(url, "SELECT version || ':' || text FROM blob_texts")
        XCTAssertEqual(rows.trimmingCharacters(in: .whitespacesAndNewlines), "\(TextExtractor.version):hardware store receipt")
    }
}
