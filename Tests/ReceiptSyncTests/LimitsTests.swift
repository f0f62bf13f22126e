import AsyncHTTPClient
import Foundation
import ReceiptServer
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Limits a public server needs: a request rate per token (429 with Retry-After, which the client
/// waits out) and a JSON access log line per request that never holds a token.
final class LimitsTests: XCTestCase {
    func testARequestRatePerTokenIs429WithRetryAfterAndSyncWaitsItOut() async throws {
        let h = try await Household.start(["alice", "bob"], limits: ServerLimits(rate: (perSecond: 2, burst: 3)))
        defer { Task { await h.shutdown() } }
        let alice = h["alice"], bob = h["bob"]
        var statuses: [Int] = []
        var retryAfter: [String] = []
        for _ in 0..<6 {
            var request = HTTPClientRequest(url: h.server.url + "/v1/account")
            request.headers.add(name: "Authorization", value: "Bearer \(alice.token)")
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            statuses.append(Int(response.status.code))
            retryAfter += response.headers["Retry-After"]
            _ = try await response.body.collect(upTo: 1 << 20)
        }
        XCTAssertTrue(statuses.contains(429), "\(statuses)")
        XCTAssertFalse(retryAfter.isEmpty)
        XCTAssertTrue(retryAfter.allSatisfy { (Int($0) ?? 0) >= 1 }, "\(retryAfter)")
        // Another token is not slowed by alice's.
        checkEqual(try await h.raw.call(.GET, "/v1/account", token: bob.token).status, 200)

        // A sync makes more requests than the burst: it waits as told and finishes.
        try await alice.ok(["import", try h.file("a.pdf", size: 3000, seed: 1).path])
        let synced = try await alice.sync()
        XCTAssertEqual(synced["pushed"] as? Int, 1)
    }

    func testOneJSONAccessLogLinePerRequestWithoutTheToken() async throws {
        let folder = TemporaryFolder("receipt-limits")
        let data = folder.file("server")
        let token = try await TestServer.addAccount("alice", data: data)
        let output = folder.file("server-run")
        let server = try CLI.start(["server", "run", "--data", data, "--listen", "127.0.0.1:0", "--json"], output: output)
        defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }
        let url = try await TLSTests.listeningURL(output, server)
        let raw = Raw(base: url)
        checkEqual(try await raw.call(.GET, "/v1/account", token: token).status, 200)
        checkEqual(try await raw.call(.GET, "/v1/zones/alice/nothing/changes?since=secret-looking", token: token).status, 404)
        checkEqual(try await raw.call(.GET, "/v1/zones", token: nil).status, 401)
        kill(server.processIdentifier, SIGTERM)
        let ended = await CLI.wait(server, output: output)
        XCTAssertEqual(ended.status, 0, ended.stderr)
        XCTAssertFalse(ended.stderr.contains(token), "the access log must never hold a token")
        XCTAssertFalse(ended.stderr.contains("secret-looking"), "nor a query")
        let lines = ended.stderr.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        XCTAssertEqual(lines.count, 3, ended.stderr)
        let first = try XCTUnwrap(lines.first)
        XCTAssertEqual(first["account"] as? String, "alice")
        XCTAssertEqual(first["method"] as? String, "GET")
        XCTAssertEqual(first["route"] as? String, "/v1/account")
        XCTAssertEqual(first["status"] as? Int, 200)
        XCTAssertGreaterThan(first["bytesOut"] as? Int ?? 0, 0)
        XCTAssertNotNil(first["ms"] as? Double)
        XCTAssertNotNil(first["time"] as? String)
        XCTAssertEqual(lines[1]["route"] as? String, "/v1/zones/{owner}/{zone}/changes")
        XCTAssertEqual(lines[1]["status"] as? Int, 404)
        XCTAssertEqual(lines[2]["status"] as? Int, 401)
        XCTAssertTrue(lines[2]["account"] is NSNull || lines[2]["account"] == nil)
    }
}
