import Foundation
import ReceiptServer
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// One HTTP/1.1 exchange over a plain socket, from any address of 127.0.0.0/8 (the server sees each
/// as another client), with headers no HTTP library would send (an impossible `Content-Length`, a
/// forged `Origin`). The blocking socket calls run on a Dispatch thread, never on the cooperative
/// pool an in-process test server needs.
struct RawExchange {
    let status: Int
    let head: String
    let body: String
    /// The body as sent (a download's bytes are no text).
    var bytes: [UInt8] = []

    func header(_ name: String) -> String? {
        for line in head.split(separator: "\r\n").dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == name.lowercased() { return parts[1].trimmingCharacters(in: .whitespaces) }
        }
        return nil
    }

    /// Sends `request` (bytes as they go on the wire) and reads the answer to the connection's end.
    static func send(_ request: [UInt8], port: Int, from source: String = "127.0.0.1") async throws -> RawExchange {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try exchange(request, port: port, from: source) })
            }
        }
    }

    /// A request with `Connection: close` and, when there is a body, its length.
    static func request(_ method: String, _ path: String, port: Int, headers: [String: String] = [:],
                        body: String? = nil) -> [UInt8] {
        var lines = ["\(method) \(path) HTTP/1.1", "Host: 127.0.0.1:\(port)", "Connection: close"]
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { lines.append("\(name): \(value)") }
        if let body, headers["Content-Length"] == nil { lines.append("Content-Length: \(body.utf8.count)") }
        return Array((lines.joined(separator: "\r\n") + "\r\n\r\n" + (body ?? "")).utf8)
    }

    private static func exchange(_ request: [UInt8], port: Int, from source: String) throws -> RawExchange {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket: errno \(errno)") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        func address(_ host: String, _ port: Int) -> sockaddr_in {
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_port = in_port_t(UInt16(port).bigEndian)
            a.sin_addr.s_addr = inet_addr(host)
            return a
        }
        func call(_ a: sockaddr_in, _ op: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
            withUnsafePointer(to: a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { op(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
        guard call(address(source, 0), { bind($0, $1, $2) }) == 0 else { throw HarnessError("bind \(source): errno \(errno)") }
        guard call(address("127.0.0.1", port), { connect($0, $1, $2) }) == 0 else {
            throw HarnessError("connect to 127.0.0.1:\(port): errno \(errno)")
        }
        var sent = 0
        while sent < request.count {
            let n = request[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 { break }  // the server may answer (and close) before it read everything
            sent += n
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            answer += buffer[..<n]
        }
        let text = String(decoding: answer, as: UTF8.self)
        let end = text.range(of: "\r\n\r\n")
        let head = end.map { String(text[..<$0.lowerBound]) } ?? text
        let status = head.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        let bodyStart = answer.firstRange(of: Array("\r\n\r\n".utf8)).map(\.upperBound) ?? answer.count
        return RawExchange(status: status, head: head, body: end.map { String(text[$0.upperBound...]) } ?? "",
                           bytes: Array(answer[bodyStart...]))
    }
}

/// A browser's side of the web view: signs in over a plain socket from `source` and keeps the
/// session cookie and the CSRF token of the pages it read.
struct WebTestClient {
    let port: Int
    var source = "127.0.0.1"
    var cookie: String?
    var csrf: String?

    init(port: Int, source: String = "127.0.0.1") {
        self.port = port
        self.source = source
    }

    static func form(_ fields: [(String, String)]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }.joined(separator: "&")
    }

    /// `POST /signin`; on success keeps the session cookie.
    @discardableResult
    mutating func signIn(_ account: String, _ password: String, headers: [String: String] = [:]) async throws -> RawExchange {
        var all = ["Content-Type": "application/x-www-form-urlencoded"]
        all.merge(headers) { $1 }
        let answer = try await send("POST", "/signin", headers: all, body: Self.form([("account", account), ("password", password)]))
        if answer.status == 303, let set = answer.header("Set-Cookie") {
            cookie = set.split(separator: ";").first.map(String.init)
        }
        return answer
    }

    /// A GET with the session cookie; keeps the CSRF token the page carries.
    mutating func get(_ path: String) async throws -> RawExchange {
        let answer = try await send("GET", path)
        let marker = #"name="csrf" value=""#
        if let range = answer.body.range(of: marker) {
            csrf = String(answer.body[range.upperBound...].prefix { $0 != "\"" })
        }
        return answer
    }

    /// A url-encoded POST with the session cookie and the CSRF token.
    func post(_ path: String, _ fields: [(String, String)], headers: [String: String] = [:]) async throws -> RawExchange {
        var all = ["Content-Type": "application/x-www-form-urlencoded"]
        all.merge(headers) { $1 }
        return try await send("POST", path, headers: all, body: Self.form(fields + [("csrf", csrf ?? "")]))
    }

    func send(_ method: String, _ path: String, headers: [String: String] = [:], body: String? = nil) async throws -> RawExchange {
        var all = headers
        if let cookie { all["Cookie"] = cookie }
        return try await RawExchange.send(RawExchange.request(method, path, port: port, headers: all, body: body),
                                          port: port, from: source)
    }

    /// A multipart upload to `/z/OWNER/ZONE/upload`, the CSRF field first, one file part per `(name, bytes)`.
    func upload(_ zonePath: String, files: [(String, [UInt8])], headers: [String: String] = [:]) async throws -> RawExchange {
        let boundary = "receipt-test-boundary"
        var body = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n\(csrf ?? "")\r\n".utf8)
        for (name, bytes) in files {
            body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"files\"; filename=\"".utf8)
            body += Array(name.utf8)
            body += Array("\"\r\nContent-Type: application/pdf\r\n\r\n".utf8) + bytes + Array("\r\n".utf8)
        }
        body += Array("--\(boundary)--\r\n".utf8)
        var head = ["POST \(zonePath)/upload HTTP/1.1", "Host: 127.0.0.1:\(port)", "Connection: close",
                    "Content-Type: multipart/form-data; boundary=\(boundary)", "Content-Length: \(body.count)"]
        if let cookie { head.append("Cookie: \(cookie)") }
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { head.append("\(name): \(value)") }
        return try await RawExchange.send(Array((head.joined(separator: "\r\n") + "\r\n\r\n").utf8) + body, port: port, from: source)
    }
}

extension HouseholdTestCase {
    /// A household of alice with a web password and a zone `z`, signed in from 127.0.0.1.
    func signedIn() async throws -> (Household, WebTestClient) {
        let h = try await Household.start(["alice"])
        checkEqual(try await h.raw.call(.PUT, "/v1/zones/alice/z", token: h["alice"].token).status, 201)
        var web = try await browser(h, signedInAs: "alice")
        checkEqual(try await web.get("/z/alice/z").status, 200)
        XCTAssertNotNil(web.csrf)
        return (h, web)
    }

    /// A browser of the household's server, signed in as `account` (given a web password here).
    func browser(_ h: Household, signedInAs account: String) async throws -> WebTestClient {
        let store = try await ServerDatabase(Household.database).open(dataPath: h.server.data)
        try await store.setPassword(account: account, password: "correct horse")
        try await store.close()
        var web = WebTestClient(port: h.server.port)
        checkEqual(try await web.signIn(account, "correct horse").status, 303)
        return web
    }
}
