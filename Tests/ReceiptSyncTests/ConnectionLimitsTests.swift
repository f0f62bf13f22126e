import BlobStore
import AsyncHTTPClient
import Foundation
import NIOCore
import ReceiptServer
import ReceiptWire
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Limits a public server needs, over real sockets on 127.0.0.1: slow and silent senders are dropped,
/// connections beyond the caps are closed at once, and each route refuses a body over its limit with
/// 413, before reading it when its length is declared.
final class ConnectionLimitsTests: XCTestCase {
    /// Tight limits so that a test does not wait minutes; the behaviour is the defaults'.
    static let tight = ServerLimits(maxBlobSize: 1 << 20, maxBundleSize: 4096, maxPushBody: 4096, maxSmallJSON: 1024,
                                    maxConnections: 2,
                                    pace: ClientPace(headTimeout: .seconds(1), bodyWindow: .seconds(1), minBodyBytes: 256))

    func testARequestHeadSentAByteAtATimeIsDropped() async throws {
        let h = try await Household.start(["alice"], limits: Self.tight)
        defer { Task { await h.shutdown() } }
        let socket = try TCPClient(port: h.server.port)
        // Faster than any idle timeout could notice, far slower than a head deserves.
        let closed = try await socket.drip(Array("GET /v1/account HTTP/1.1\r\nHost: x\r\nX-Pad: \(String(repeating: "a", count: 400))".utf8),
                                           every: .milliseconds(100), until: .seconds(60))
        XCTAssertTrue(closed, "the server kept a connection whose head took a minute")
    }

    func testABodySentAByteAtATimeIsDropped() async throws {
        let h = try await Household.start(["alice"], limits: Self.tight)
        defer { Task { await h.shutdown() } }
        let socket = try TCPClient(port: h.server.port)
        let sha = String(repeating: "a", count: 64)
        try socket.send(Array("PUT /v1/blobs/\(sha) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(h["alice"].token)\r\nContent-Length: 100000\r\n\r\n".utf8))
        let closed = try await socket.drip([UInt8](repeating: 0x61, count: 1000), every: .milliseconds(100), until: .seconds(60))
        XCTAssertTrue(closed, "the server kept a connection whose body came at 10 bytes a second")
        // A body at an ordinary pace still goes through (a wrong address: 422 after the whole body).
        checkEqual(try await h.raw.call(.PUT, "/v1/blobs/\(sha)", token: h["alice"].token, body: [UInt8](repeating: 1, count: 200_000),
                                        json: false).status, 422)
    }

    func testAConnectionBeyondTheCapIsClosedAtOnceInsteadOfWaiting() async throws {
        let h = try await Household.start(["alice"], limits: ServerLimits(maxConnections: 2))
        defer { Task { await h.shutdown() } }
        let request = Array("GET /v1/account HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(h["alice"].token)\r\n\r\n".utf8)
        let first = try TCPClient(port: h.server.port), second = try TCPClient(port: h.server.port)
        for socket in [first, second] {
            try socket.send(request)
            checkTrue(try await socket.response(within: .seconds(60))?.hasPrefix("HTTP/1.1 200") == true)
        }
        // The third is accepted and closed at once, its request unanswered...
        let third = try TCPClient(port: h.server.port)
        try third.send(request)
        checkEqual(try await third.response(within: .seconds(10)), "", "a third connection was not closed at a cap of 2")
        // ...while those under the cap go on, and a slot is free again once one of them closes.
        checkTrue(try await second.isOpen(), "a connection under the cap was closed")
        first.close()
        checkTrue(try await Self.servedSoon(request, port: h.server.port), "no connection was served after one closed")
    }

    func testAConnectionBeyondThePerAddressCapIsClosedWhileOtherAddressesAreServed() async throws {
        let h = try await Household.start(["alice"], limits: ServerLimits(maxConnectionsPerAddress: 2))
        defer { Task { await h.shutdown() } }
        let request = Array("GET /v1/account HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(h["alice"].token)\r\n\r\n".utf8)
        let held = try (0..<2).map { _ in try TCPClient(port: h.server.port) }
        for socket in held {
            try socket.send(request)
            checkTrue(try await socket.response(within: .seconds(60))?.hasPrefix("HTTP/1.1 200") == true)
        }
        let third = try TCPClient(port: h.server.port)
        try third.send(request)
        checkEqual(try await third.response(within: .seconds(10)), "", "a third connection from 127.0.0.1 was served")
        let elsewhere = try TCPClient(port: h.server.port, from: "127.0.0.2")
        try elsewhere.send(request)
        checkTrue(try await elsewhere.response(within: .seconds(60))?.hasPrefix("HTTP/1.1 200") == true,
                  "another address was refused by the cap of one")
    }

    /// Served on a new connection within 60 s (a closed one's slot is freed as the server sees it close).
    static func servedSoon(_ request: [UInt8], port: Int) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let socket = try TCPClient(port: port)
            try socket.send(request)
            if try await socket.response(within: .seconds(10))?.hasPrefix("HTTP/1.1 200") == true { return true }
        }
        return false
    }

    func testASilentConnectionOrTLSHandshakeIsClosedAfterTheHeadTimeout() async throws {
        checkEqual(ClientPace().headTimeout, .seconds(10), "a silent connection is held longer than 10 s by default")
        let pace = ClientPace(headTimeout: .seconds(1))
        let plain = try await Household.start([], limits: ServerLimits(pace: pace))
        let made = try MadeCertificate.make(hosts: ["127.0.0.1"])
        let tls = try await Household.start([], limits: ServerLimits(pace: pace)) { folder in
            (try TLSTests.serve(made, in: folder), ["--pin", made.sha256])
        }
        defer { Task { await plain.shutdown(); await tls.shutdown() } }
        for (what, port, hello) in [("plain", plain.server.port, []), ("TLS", tls.server.port, []),
                                    ("TLS, half a ClientHello", tls.server.port, [0x16, 0x03, 0x01, 0x02, 0x00, 0x01] as [UInt8])] {
            let socket = try TCPClient(port: port)
            try socket.send(hello)
            let started = ContinuousClock.now
            checkTrue(await socket.closes(within: .seconds(30)), "\(what): a silent connection was kept")
            checkTrue(ContinuousClock.now - started < .seconds(10), "\(what): closed only after \(ContinuousClock.now - started)")
        }
    }

    /// A declared `Content-Length` over the route's limit is answered 413 before any of the body is
    /// sent, and the connection is closed rather than the body read.
    func testAContentLengthOverTheLimitIs413BeforeTheBodyIsRead() async throws {
        var limits = Self.tight
        limits.maxConnections = 512
        limits.maxWebUpload = 100_000
        let h = try await Household.start(["alice"], limits: limits)
        defer { Task { await h.shutdown() } }
        let token = h["alice"].token
        checkEqual(try await h.raw.call(.PUT, "/v1/zones/alice/z", token: token).status, 201)
        let auth = "Authorization: Bearer \(token)\r\n"
        let cases: [(String, Int)] = [
            ("PUT /v1/blobs/\(String(repeating: "c", count: 64))", (1 << 20) + 1), ("POST /v1/blobs/bundle", 4097),
            ("POST /v1/zones/alice/z/push", 4097), ("POST /v1/blobs/want", 1025), ("POST /v1/nothing/here", 1 << 30),
            ("POST /z/alice/z/upload", 100_001),
        ]
        for (line, length) in cases {
            for authorization in [auth, ""] where authorization == auth || length == 1 << 30 {
                let socket = try TCPClient(port: h.server.port)
                try socket.send(Array("\(line) HTTP/1.1\r\nHost: x\r\n\(authorization)Content-Type: multipart/form-data; boundary=b\r\nContent-Length: \(length)\r\n\r\n".utf8))
                let head = try await socket.response(within: .seconds(10)) ?? "no answer"
                checkTrue(head.hasPrefix("HTTP/1.1 413"), "\(line) with \(length) bytes declared: \(head)")
                // What the client sends after the answer is not read for long: the server closes.
                let closed = try await socket.drip([UInt8](repeating: 0x61, count: 100_000), every: .milliseconds(1), until: .seconds(30))
                checkTrue(closed, "\(line): the body was read after the 413")
            }
        }
    }

    func testEachRouteRefusesABodyOverItsLimitWith413() async throws {
        let h = try await Household.start(["alice"], limits: Self.tight)
        defer { Task { await h.shutdown() } }
        let token = h["alice"].token
        checkEqual(try await h.raw.call(.PUT, "/v1/zones/alice/z", token: token).status, 201)
        // A push over maxPushBody.
        let note = String(repeating: "n", count: 3000)
        let push = "{\"records\":[{\"id\":\"\(UUID().uuidString.lowercased())\",\"baseTag\":null,\"receipt\":{\"note\":\"\(note)\",\"n2\":\"\(note)\"}}]}"
        let pushed = try await h.raw.call(.POST, "/v1/zones/alice/z/push", token: token, body: Array(push.utf8))
        checkEqual(pushed.status, 413, pushed.text)
        checkTrue(pushed.text.contains("limit"), pushed.text)
        // A want list over maxSmallJSON.
        let want = try await h.raw.json(.POST, "/v1/blobs/want", token: token,
                                        WireWantRequest(blobs: Array(repeating: String(repeating: "b", count: 64), count: 40)))
        checkEqual(want.status, 413, want.text)
        // A bundle over maxBundleSize (each blob under maxBlobSize).
        var bundle: [UInt8] = []
        for seed in 0..<3 {
            let bytes = TestData.random(2000, seed: UInt64(seed))
            bundle += WireBundle.header(sha256: SHA256Hasher.hash(bytes).digest, length: Int64(bytes.count)) + bytes
        }
        let bundled = try await h.raw.call(.POST, "/v1/blobs/bundle", token: token, body: bundle, json: false)
        checkEqual(bundled.status, 413, bundled.text)
        // Nothing of the bundle was kept: the server still wants all three.
        let hexes = (0..<3).map { SHA256Hasher.hash(TestData.random(2000, seed: UInt64($0))).hex }
        let stillWanted = try await h.raw.json(.POST, "/v1/blobs/want", token: token, WireWantRequest(blobs: hexes))
        checkEqual((try JSONDecoder().decode(WireWantResponse.self, from: Data(stillWanted.body))).want.count, 3)
        // A blob over maxBlobSize.
        let big = try await h.raw.call(.PUT, "/v1/blobs/\(String(repeating: "c", count: 64))", token: token,
                                       body: [UInt8](repeating: 7, count: (1 << 20) + 1), json: false)
        checkEqual(big.status, 413, big.text)
    }

    /// The web view's upload: a whole upload over `maxWebUpload` is 413 and nothing of it is kept.
    func testAWebUploadOverItsLimitIs413() async throws {
        var limits = Self.tight
        limits.maxConnections = 512
        limits.maxWebUpload = 100_000
        let h = try await Household.start(["alice"], limits: limits)
        defer { Task { await h.shutdown() } }
        checkEqual(try await h.raw.call(.PUT, "/v1/zones/alice/z", token: h["alice"].token).status, 201)
        let store = try await ServerDatabase(Household.database).open(dataPath: h.server.data)
        try await store.setPassword(account: "alice", password: "correct horse")
        try await store.close()
        // Sign in (the session cookie, on the 303 itself), then read the CSRF token off the zone's page.
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))
        defer { Task { try? await http.shutdown() } }
        var signin = HTTPClientRequest(url: h.server.url + "/signin")
        signin.method = .POST
        signin.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        signin.body = .bytes(ByteBuffer(string: "account=alice&password=correct+horse"))
        let signed = try await http.execute(signin, timeout: .seconds(60))
        checkEqual(signed.status.code, 303)
        let cookie = try XCTUnwrap(signed.headers["Set-Cookie"].first?.split(separator: ";").first.map(String.init))
        var page = HTTPClientRequest(url: h.server.url + "/z/alice/z")
        page.headers.add(name: "Cookie", value: cookie)
        let html = String(buffer: try await http.execute(page, timeout: .seconds(60)).body.collect(upTo: 1 << 20))
        let marker = #"name="csrf" value=""#
        let csrf = try XCTUnwrap(html.range(of: marker).map { String(html[$0.upperBound...].prefix { $0 != "\"" }) }, html)
        func upload(_ size: Int) async throws -> Int {
            let boundary = "receipt-test-boundary"
            var body = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n\(csrf)\r\n".utf8)
            body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"files\"; filename=\"a.pdf\"\r\nContent-Type: application/pdf\r\n\r\n".utf8)
            body += TestData.random(size, seed: UInt64(size)) + Array("\r\n--\(boundary)--\r\n".utf8)
            var request = HTTPClientRequest(url: h.server.url + "/z/alice/z/upload")
            request.method = .POST
            request.headers.add(name: "Cookie", value: cookie)
            request.headers.add(name: "Content-Type", value: "multipart/form-data; boundary=\(boundary)")
            request.body = .bytes(ByteBuffer(bytes: body))
            let response = try await http.execute(request, timeout: .seconds(60))
            _ = try await response.body.collect(upTo: 1 << 20)
            return Int(response.status.code)
        }
        checkEqual(try await upload(200_000), 413)
        checkEqual(try await upload(50_000), 303, "an upload within the limit goes through")
        let names = try FileManager.default.subpathsOfDirectory(atPath: h.server.data + "/blobs").filter { $0.count > 60 }
        checkEqual(names.count, 1, "the refused upload left a blob: \(names)")
    }
}

/// A plain TCP connection to 127.0.0.1, for clients no HTTP library would imitate.
final class TCPClient: @unchecked Sendable {
    private var fd: Int32

    /// `from`: the local address to connect from (any of 127.0.0.0/8 on Linux).
    init(port: Int, from source: String = "127.0.0.1") throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket: errno \(errno)") }
        func address(_ host: String, _ port: Int) -> sockaddr_in {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr(host)
            return address
        }
        var local = address(source, 0), remote = address("127.0.0.1", port)
        let size = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) } }
        guard bound == 0 else { throw HarnessError("bind to \(source): errno \(errno)") }
        let connected = withUnsafePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, size) } }
        guard connected == 0 else { throw HarnessError("connect to 127.0.0.1:\(port): errno \(errno)") }
    }

    deinit { close() }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// Sends all of `bytes`; false when the peer has closed the connection.
    @discardableResult
    func send(_ bytes: [UInt8]) throws -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EPIPE || errno == ECONNRESET { return false }
                throw HarnessError("send: errno \(errno)")
            }
            sent += n
        }
        return true
    }

    /// Waits up to `milliseconds` for bytes or the end; nil: nothing yet; else what arrived (empty: closed).
    private func receive(waiting milliseconds: Int32) -> [UInt8]? {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, milliseconds) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = recv(fd, &buffer, buffer.count, 0)
        return n > 0 ? Array(buffer[..<n]) : []
    }

    /// Sends one byte of `bytes` at a time, `every` apart, until the server closes the connection
    /// (true) or `until` has passed (false).
    func drip(_ bytes: [UInt8], every: Duration, until: Duration) async throws -> Bool {
        let deadline = ContinuousClock.now + until
        var next = 0
        while ContinuousClock.now < deadline {
            if let got = receive(waiting: 0) {
                if got.isEmpty { return true }
                continue  // an answer (e.g. 408): the end follows
            }
            if next < bytes.count {
                guard try send([bytes[next]]) else { return true }
                next += 1
            }
            try await Task.sleep(for: every)
        }
        return false
    }

    /// The head of the next response, or nil if none arrives within `within` ("" when the server
    /// closes the connection without a byte).
    func response(within: Duration) async throws -> String? {
        let deadline = ContinuousClock.now + within
        var text: [UInt8] = []
        while ContinuousClock.now < deadline {
            guard let got = receive(waiting: 50) else { await Task.yield(); continue }
            if got.isEmpty { return String(decoding: text, as: UTF8.self) }
            text += got
            if let end = String(decoding: text, as: UTF8.self).range(of: "\r\n\r\n") {
                return String(String(decoding: text, as: UTF8.self)[..<end.lowerBound])
            }
        }
        return text.isEmpty ? nil : String(decoding: text, as: UTF8.self)
    }

    /// Whether the server closes the connection within `within` (whatever it sends before).
    func closes(within: Duration) async -> Bool {
        let deadline = ContinuousClock.now + within
        while ContinuousClock.now < deadline {
            guard let got = receive(waiting: 50) else { await Task.yield(); continue }
            if got.isEmpty { return true }
        }
        return false
    }

    /// Whether the connection is still open (no end received).
    func isOpen() async throws -> Bool {
        while let got = receive(waiting: 0) {
            if got.isEmpty { return false }
        }
        return true
    }
}
