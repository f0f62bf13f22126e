import BlobStore
import Foundation
import ReceiptServer
import ReceiptWire
import TestSupport
import XCTest

/// Every number a client sends — a page, a limit, a change token's counter, a JSON timestamp or
/// size, a `Content-Length`, a `Range` — at the edges of what it can be written as, against the real
/// `receipt server run` as its own process: each is answered (400 where it cannot be served), and
/// the server is still there to answer the next request. Before, `?page=9223372036854775807` on a
/// zone's list trapped in the page arithmetic and took the server down with it.
final class ExtremeNumbersTests: XCTestCase {
    func testExtremeNumbersAreAnsweredAndTheServerGoesOn() async throws {
        let folder = TemporaryFolder("receipt-extreme")
        let data = folder.file("server")
        let token = try await TestServer.addAccount("alice", data: data)
        let store = try await ServerDatabase(nil).open(dataPath: data)
        try await store.setPassword(account: "alice", password: "correct horse")
        try await store.close()
        let output = folder.file("server-run")
        let server = try CLI.start(["server", "run", "--data", data, "--listen", "127.0.0.1:0", "--json"], output: output)
        defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }
        let url = try await TLSTests.listeningURL(output, server)
        let port = try XCTUnwrap(Int(url.split(separator: ":").last ?? ""))
        let raw = Raw(base: url)

        // A zone with one receipt whose timestamps are the largest a push can carry.
        checkEqual(try await raw.call(.PUT, "/v1/zones/alice/z", token: token).status, 201)
        let bytes = TestData.random(100, seed: 7)
        let sha = TestData.sha256(bytes)
        checkEqual(try await raw.call(.PUT, "/v1/blobs/\(sha)", token: token, body: bytes, json: false).status, 204)
        let id = "00000000-0000-4000-8000-000000000001"
        let receipt = WireReceipt(merchant: "Edge", total: "1.00", currency: "EUR",
                                  attachments: [WireAttachment(sha256: sha, size: 100, filename: "edge.pdf", mediaType: "application/pdf")],
                                  createdAt: .max, modifiedAt: .max)
        let pushed = try await raw.json(.POST, "/v1/zones/alice/z/push", token: token,
                                        WirePushRequest(records: [WirePushRecord(id: id, baseTag: nil, receipt: receipt)]))
        checkEqual(pushed.status, 200, pushed.text)

        var web = WebTestClient(port: port)
        checkEqual(try await web.signIn("alice", "correct horse").status, 303)
        for page in ["9223372036854775807", "-9223372036854775808", "99999999999999999999999", "0", "-1", "1000001", "1e3", "abc"] {
            let answer = try await web.get("/z/alice/z?page=\(page)")
            XCTAssertEqual(answer.status, 400, "page=\(page): \(answer.head)")
            XCTAssertTrue(answer.body.contains("page"), "page=\(page): the refusal must name the page: \(answer.body)")
        }
        for page in ["1", "1000000", "+2"] {
            checkEqual(try await web.get("/z/alice/z?page=\(page)").status, 200, "page=\(page)")
        }
        checkEqual(try await web.get("/z/alice/z?page=1&from=2026-01-01").status, 200)
        checkEqual(try await web.get("/z/alice/z?from=99999-01-01").status, 400)
        // An edit of the receipt whose modification time is the largest there is.
        let page = try await web.get("/z/alice/z/r/\(id)")
        checkEqual(page.status, 200)
        let tag = try XCTUnwrap(page.body.range(of: #"name="changeTag" value=""#).map { String(page.body[$0.upperBound...].prefix { $0 != "\"" }) })
        // A 20-digit total is refused, as `receipt import` refuses it (FieldRulesAgreementTests); the
        // largest amount the rules take (15 digits, 4 decimals) is saved.
        let tooLarge = try await web.post("/z/alice/z/r/\(id)", [("changeTag", tag), ("merchant", "Edge 2"), ("total", "99999999999999999999.999")])
        checkEqual(tooLarge.status, 400, tooLarge.body)
        let edited = try await web.post("/z/alice/z/r/\(id)", [("changeTag", tag), ("merchant", "Edge 2"), ("total", "999999999999999.9999")])
        checkEqual(edited.status, 303, edited.body)

        // The sync API's numbers: a page size, a change token's counter, JSON numbers.
        for limit in ["9223372036854775807", "-9223372036854775808", "99999999999999999999", "0", "501"] {
            checkEqual(try await raw.call(.GET, "/v1/zones/alice/z/changes?limit=\(limit)", token: token).status, 400, "limit=\(limit)")
        }
        let changes = try JSONDecoder().decode(WireChangesResponse.self, from: Data(try await raw.call(.GET, "/v1/zones/alice/z/changes", token: token).body))
        let uid = changes.changeToken.split(separator: ".")[0]
        checkEqual(try await raw.call(.GET, "/v1/zones/alice/z/changes?since=\(uid).9223372036854775807", token: token).status, 200)
        for counter in ["-1", "99999999999999999999", "-9223372036854775808"] {
            checkEqual(try await raw.call(.GET, "/v1/zones/alice/z/changes?since=\(uid).\(counter)", token: token).status, 400, counter)
        }
        for json in [#"{"records":[{"id":"\#(id)","receipt":{"tags":[],"attachments":[],"createdAt":1e300,"modifiedAt":1}}]}"#,
                     #"{"records":[{"id":"\#(id)","receipt":{"tags":[],"attachments":[],"createdAt":9223372036854775808,"modifiedAt":1}}]}"#] {
            checkEqual(try await raw.call(.POST, "/v1/zones/alice/z/push", token: token, body: Array(json.utf8)).status, 400, json)
        }
        for size in [Int64.max, -1] {
            var bad = receipt
            bad.attachments[0].size = size
            let answer = try await raw.json(.POST, "/v1/zones/alice/z/push", token: token,
                                            WirePushRequest(records: [WirePushRecord(id: id, baseTag: changes.records.first?.changeTag, receipt: bad)]))
            let result = try JSONDecoder().decode(WirePushResponse.self, from: Data(answer.body)).results.first
            checkEqual(result?.status, .rejected, "size \(size): \(answer.text)")
        }

        // Headers: lengths that are no number a request can have, and a range past every file.
        for length in ["99999999999999999999999", "-1", "1e3", "0x10"] {
            let answer = try await RawExchange.send(RawExchange.request("PUT", "/v1/blobs/\(sha)", port: port,
                                                                        headers: ["Authorization": "Bearer \(token)", "Content-Length": length]),
                                                    port: port)
            XCTAssertEqual(answer.status, 400, "Content-Length: \(length): \(answer.head)")
        }
        let ranged = try await RawExchange.send(RawExchange.request("GET", "/v1/blobs/\(sha)", port: port,
                                                                    headers: ["Authorization": "Bearer \(token)", "Range": "bytes=9223372036854775807-"]),
                                                port: port)
        checkEqual(ranged.status, 200, ranged.head)

        XCTAssertTrue(server.isRunning, "the server stopped: \((try? String(contentsOfFile: output + ".err", encoding: .utf8)) ?? "")")
        checkEqual(try await web.get("/").status, 200)
        checkEqual(try await raw.call(.GET, "/v1/zones", token: token).status, 200)
        kill(server.processIdentifier, SIGTERM)
        let ended = await CLI.wait(server, output: output)
        XCTAssertFalse(ended.signaled, ended.stderr)
    }
}
