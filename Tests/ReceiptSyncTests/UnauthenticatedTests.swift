import Foundation
import ReceiptServer
import TestSupport
import XCTest

/// Without a valid token, `/v1` tells nothing: every path under it, known or not, with every method
/// (HEAD included), answers 401, so an outsider cannot map the routes.
final class UnauthenticatedTests: XCTestCase {
    func testEveryV1RequestWithoutAValidTokenIs401WhateverItsPathAndMethod() async throws {
        let h = try await Household.start(["alice"])
        defer { Task { await h.shutdown() } }
        let paths = ["/v1", "/v1/", "/v1/account", "/v1/no/such/route", "/v1/zones/alice/z/push",
                     "/v1/blobs/" + String(repeating: "a", count: 64), "/v1/text/put?x=1"]
        let credentials = ["", "Authorization: Bearer " + String(repeating: "0", count: 64) + "\r\n", "Authorization: Basic YTpi\r\n"]
        for method in ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"] {
            for path in paths {
                for credential in credentials {
                    let head = try await Self.exchange("\(method) \(path) HTTP/1.1\r\nHost: x\r\n\(credential)Content-Length: 0\r\n", h)
                    checkTrue(head.hasPrefix("HTTP/1.1 401"), "\(method) \(path) \(credential.isEmpty ? "without a token" : credential): \(head)")
                    checkTrue(head.lowercased().contains("www-authenticate: bearer"), head)
                }
            }
        }
        // With a valid token an unknown route is what it is.
        let known = try await Self.exchange("GET /v1/no/such/route HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(h["alice"].token)\r\n", h)
        checkTrue(known.hasPrefix("HTTP/1.1 404"), known)
    }

    /// The head of the answer to one request on a new connection.
    static func exchange(_ head: String, _ h: Household) async throws -> String {
        let socket = try TCPClient(port: h.server.port)
        try socket.send(Array((head + "Connection: close\r\n\r\n").utf8))
        return try await socket.response(within: .seconds(30)) ?? "no answer"
    }
}
