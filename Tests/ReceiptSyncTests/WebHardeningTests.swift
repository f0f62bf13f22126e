import BlobStore
import Foundation
import ReceiptServer
import ReceiptWire
import TestSupport
import XCTest

/// What the web view promises beyond its routes (docs/PROTOCOL.md, "Web view"): a cross-site POST is
/// known by its `Origin`, else its `Referer`, compared by scheme, host and port; a file name with a
/// NUL or `/` is refused, from a browser's upload and from a push alike.
final class WebHardeningTests: HouseholdTestCase {
    func testCrossSitePostsAreKnownByOriginOrRefererSchemeHostAndPort() async throws {
        let (h, web) = try await signedIn()
        defer { Task { await h.shutdown() } }
        let port = h.server.port
        let upload = try await web.upload("/z/alice/z", files: [("a.pdf", TestData.random(64, seed: 1))])
        checkEqual(upload.status, 303, upload.body)
        let id = try XCTUnwrap(upload.header("Location")?.split(separator: "/").last.map(String.init))
        var reader = web
        let page = try await reader.get("/z/alice/z/r/\(id)")
        let tag = try XCTUnwrap(page.body.range(of: #"name="changeTag" value=""#).map { String(page.body[$0.upperBound...].prefix { $0 != "\"" }) })

        let foreign: [[String: String]] = [
            ["Origin": "https://127.0.0.1:\(port)"],         // another scheme: this server speaks plain HTTP
            ["Origin": "http://127.0.0.1:\(port + 1)"],      // another port
            ["Origin": "http://localhost:\(port)"],          // another host
            ["Origin": "null"],
            ["Referer": "http://evil.example/page"],
            ["Referer": "https://127.0.0.1:\(port)/z/alice/z"],
            ["Referer": "http://127.0.0.1:\(port + 1)/z/alice/z"],
            ["Referer": "not a url"],
            ["Origin": "http://evil.example", "Referer": "http://127.0.0.1:\(port)/"],  // Origin decides when sent
        ]
        for headers in foreign {
            let edit = try await web.post("/z/alice/z/r/\(id)", [("changeTag", tag), ("merchant", "Forged")], headers: headers)
            XCTAssertEqual(edit.status, 403, "\(headers) was taken for this site")
            let signIn = try await WebTestClient(port: port).send("POST", "/signin", headers: headers.merging(
                ["Content-Type": "application/x-www-form-urlencoded"]) { $1 }, body: "account=alice&password=correct+horse")
            XCTAssertEqual(signIn.status, 403, "sign-in with \(headers) was taken for this site")
            let forged = try await web.upload("/z/alice/z", files: [("b.pdf", TestData.random(64, seed: 2))], headers: headers)
            XCTAssertEqual(forged.status, 403, "upload with \(headers)")
        }
        let after = try await reader.get("/z/alice/z/r/\(id)")
        XCTAssertFalse(after.body.contains("Forged"), "a refused edit changed the receipt")

        let same: [[String: String]] = [
            ["Origin": "http://127.0.0.1:\(port)"], ["Origin": "HTTP://127.0.0.1:\(port)"],
            ["Referer": "http://127.0.0.1:\(port)/z/alice/z/r/\(id)?x=1"], [:],
        ]
        var current = tag
        for headers in same {
            let edit = try await web.post("/z/alice/z/r/\(id)", [("changeTag", current), ("merchant", "Mine")], headers: headers)
            XCTAssertEqual(edit.status, 303, "\(headers) was refused: \(edit.body)")
            let shown = try await reader.get("/z/alice/z/r/\(id)")
            current = try XCTUnwrap(shown.body.range(of: #"name="changeTag" value=""#).map { String(shown.body[$0.upperBound...].prefix { $0 != "\"" }) })
        }
    }

    func testFileNamesWithNULOrSlashAreRefusedFromBrowsersAndPushes() async throws {
        let (h, web) = try await signedIn()
        defer { Task { await h.shutdown() } }
        for name in ["a/b.pdf", "../../etc/passwd", "a\u{0}b.pdf", "/abs.pdf"] {
            let answer = try await web.upload("/z/alice/z", files: [("ok.pdf", TestData.random(64, seed: 3)), (name, TestData.random(64, seed: 4))])
            XCTAssertEqual(answer.status, 400, "\(name.debugDescription) was accepted: \(answer.head)")
            XCTAssertTrue(answer.body.contains("file name"), answer.body)
        }
        let blobs = (try? FileManager.default.subpathsOfDirectory(atPath: h.server.data + "/blobs").filter { $0.count > 60 }) ?? []
        checkEqual(blobs, [], "a refused upload kept its files")
        checkEqual(try await web.upload("/z/alice/z", files: [("back\\slash.pdf", TestData.random(64, seed: 5))]).status, 303)

        let bytes = TestData.random(100, seed: 6)
        let sha = TestData.sha256(bytes)
        checkEqual(try await h.raw.call(.PUT, "/v1/blobs/\(sha)", token: h["alice"].token, body: bytes, json: false).status, 204)
        for (n, name) in ["x/y.pdf", "nul\u{0}.pdf", "/"].enumerated() {
            let receipt = WireReceipt(attachments: [WireAttachment(sha256: sha, size: 100, filename: name, mediaType: "application/pdf")],
                                      createdAt: 1, modifiedAt: 1)
            let answer = try await h.raw.json(.POST, "/v1/zones/alice/z/push", token: h["alice"].token,
                                              WirePushRequest(records: [WirePushRecord(id: "00000000-0000-4000-8000-00000000000\(n)", baseTag: nil, receipt: receipt)]))
            let result = try JSONDecoder().decode(WirePushResponse.self, from: Data(answer.body)).results.first
            checkEqual(result?.status, .rejected, "\(name.debugDescription): \(answer.text)")
            XCTAssertTrue(result?.error?.contains("file name") ?? false, result?.error ?? "")
        }
    }

    /// `localhost`, 127.0.0.0/8 and `::1` are this machine; `*.localhost` is a name like any other.
    func testOnlyLocalhostLoopbackAddressesAndIPv6LoopbackAreThisMachine() async throws {
        let folder = TemporaryFolder("receipt-local")
        let vault = folder.file("vault")
        checkEqual(try await CLI.run(["init", "--vault", vault], in: folder).status, 0)
        let token = String(repeating: "ab", count: 32)
        for url in ["http://evil.localhost:8080", "http://localhost.evil.example:8080", "http://127.0.0.1.nip.io:8080",
                    "http://[::ffff:7f00:1]:8080", "http://128.0.0.1:8080"] {
            let refused = try await CLI.run(["remote", "set", url, "--account", "a", "--token", token, "--vault", vault], in: folder)
            XCTAssertEqual(refused.status, 2, "\(url) was taken for this machine")
            XCTAssertTrue(refused.stderr.contains("--insecure-http"), refused.stderr)
        }
        for url in ["http://LOCALHOST:8080", "http://127.255.0.1:8080", "http://[::1]:8080"] {
            let local = try await CLI.run(["remote", "set", url, "--account", "a", "--token", token, "--vault", vault], in: folder)
            XCTAssertEqual(local.status, 0, "\(url): \(local.stderr)")
        }
    }
}
