import AsyncHTTPClient
import BlobStore
import Foundation
import NIOCore
import NIOHTTP1
@testable import ReceiptServer
import ReceiptWire
import TestSupport
import XCTest

/// Bytes that are not what their upload declares are refused (415) on every path, and a thumbnail is
/// made only from PNG, JPEG, GIF, WebP, TIFF or PDF bytes by the coder of that type, under an
/// ImageMagick policy of the server's own: an SVG uploaded as `image/png` whose `<image href>` names
/// another household's blob never brings a byte of that blob back. Real ImageMagick, a real server.
final class UploadTypeTests: XCTestCase {
    /// A household whose bob keeps a secret image in his own zone, and an alice signed in to the web view.
    struct Scene {
        let h: Household
        let web: WebSignIn
        let secret: BlobID
        let secretPath: String
    }

    func scene() async throws -> Scene {
        let h = try await Household.start(["alice", "bob"])
        let alice = h["alice"].token, bob = h["bob"].token
        checkEqual(try await h.raw.call(.PUT, "/v1/zones/alice/home", token: alice).status, 201)
        checkEqual(try await h.raw.call(.PUT, "/v1/zones/bob/private", token: bob).status, 201)
        let secret = try Self.image("png", color: "red")
        let id = try await Self.put(secret, as: "image/png", token: bob, h)
        try await Self.push(id, size: secret.count, as: "image/png", to: "bob/private", token: bob, h)
        let web = try await WebSignIn.start(h, account: "alice")
        return Scene(h: h, web: web, secret: id, secretPath: BlobStore(root: h.server.data).path(for: id))
    }

    /// SVGs that pull in the secret blob, each one way: by a path relative to the thumbnail work
    /// folder of the data folder, by its absolute path, as `text:` and as `@file`.
    static func hostileSVGs(_ s: Scene) -> [[UInt8]] {
        let relative = "../../blobs/" + String(s.secretPath.split(separator: "/").suffix(2).joined(separator: "/"))
        return [relative, s.secretPath, "text:" + s.secretPath, "@" + s.secretPath].map { href in
            Array(("<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" width=\"64\" "
                   + "height=\"64\"><image xlink:href=\"\(href)\" x=\"0\" y=\"0\" width=\"64\" height=\"64\"/></svg>\n").utf8)
        }
    }

    /// An MVG drawing that reads the secret as text and as an image.
    static func hostileMVG(_ s: Scene) -> [UInt8] {
        Array("push graphic-context\nviewbox 0 0 64 64\nimage over 0,0 64,64 'text:\(s.secretPath)'\nimage over 0,0 64,64 '\(s.secretPath)'\npop graphic-context\n".utf8)
    }

    func testBytesThatAreNotTheirDeclaredTypeAre415OnEveryUploadPath() async throws {
        let s = try await scene()
        defer { Task { await s.h.shutdown() } }
        let token = s.h["alice"].token
        let svg = Self.hostileSVGs(s)[1], mvg = Self.hostileMVG(s)

        // The web view's upload, by the part's Content-Type and by the file's name.
        for (name, type, bytes) in [("receipt.png", "image/png", svg), ("receipt.jpg", "image/jpeg", mvg), ("receipt.png", "", svg)] {
            let answer = try await s.web.upload("alice/home", name: name, type: type, bytes: bytes)
            checkEqual(answer.status, 415, "\(name) as \(type): \(answer.text)")
            checkTrue(answer.text.contains("but its bytes are text"), answer.text)
        }
        // PUT /v1/blobs with its Content-Type.
        let put = try await Self.call(.PUT, "/v1/blobs/\(SHA256Hasher.hash(svg).hex)", type: "image/png", body: svg, token: token, s.h)
        checkEqual(put.status, 415, put.text)
        checkTrue(put.text.contains("png but its bytes are text"), put.text)
        // Blobs that declare no type (PUT without one, a bundle) are declared by the push naming them.
        let plain = try await Self.put(svg, as: nil, token: token, s.h)
        let bundled = WireBundle.header(sha256: SHA256Hasher.hash(mvg).digest, length: Int64(mvg.count)) + mvg
        checkEqual(try await s.h.raw.call(.POST, "/v1/blobs/bundle", token: token, body: bundled, json: false).status, 204)
        for (id, type, size) in [(plain, "image/png", svg.count), (SHA256Hasher.hash(mvg), "image/jpeg", mvg.count)] {
            let pushed = try await Self.pushAnswer(id, size: size, as: type, to: "alice/home", token: token, s.h)
            checkEqual(pushed.status, 415, pushed.text)
        }
        let changes = try await s.h.raw.call(.GET, "/v1/zones/alice/home/changes", token: token)
        checkEqual(try JSONDecoder().decode(WireChangesResponse.self, from: Data(changes.body)).records.count, 0,
                   "a refused push kept a receipt")
        // Bytes that are what they say go through on each path.
        let png = try Self.image("png", color: "blue")
        checkEqual(try await s.web.upload("alice/home", name: "photo.png", type: "image/png", bytes: png).status, 303)
        let jpeg = try Self.image("jpeg", color: "green")
        let id = try await Self.put(jpeg, as: "image/jpeg", token: token, s.h)
        try await Self.push(id, size: jpeg.count, as: "image/jpeg", to: "alice/home", token: token, s.h)
    }

    /// Bytes stored under a raster type without the upload's check (written into the catalog
    /// directly here) still get no thumbnail but the placeholder.
    func testAnSVGStoredAsPNGNeverRendersAnotherHouseholdsBlob() async throws {
        let s = try await scene()
        defer { Task { await s.h.shutdown() } }
        let token = s.h["alice"].token
        let secretBytes = try XCTUnwrap(FileManager.default.contents(atPath: s.secretPath))
        let hostile = Self.hostileSVGs(s).map { ($0, "image/png") } + [(Self.hostileMVG(s), "image/jpeg"), (Self.hostileSVGs(s)[1], "image/tiff")]
        for (bytes, type) in hostile {
            let id = try await Self.put(bytes, as: nil, token: token, s.h)
            let receipt = try await Self.storeUnchecked(id, size: bytes.count, as: type, zone: "home", owner: "alice", s.h)
            let thumb = try await s.web.get("/z/alice/home/r/\(receipt)/t/\(id.hex)")
            checkEqual(thumb.status, 200)
            checkEqual(thumb.contentType, "image/svg+xml", "a \(type) thumbnail was rendered from text")
            checkEqual(thumb.text, WebThumbnails.placeholderSVG)
            checkFalse(Data(thumb.body).range(of: secretBytes.prefix(64)) != nil, "the secret blob's bytes came back")
        }
    }

    func testThumbnailsOfEachRasterTypeAndOfAPDFAreMadeByTheirCoder() async throws {
        let s = try await scene()
        defer { Task { await s.h.shutdown() } }
        let pdf = try Array(Data(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/2025/hotel-invoice.pdf")))
        let files: [(String, String, [UInt8])] = try [("png", "image/png"), ("jpeg", "image/jpeg"), ("gif", "image/gif"),
                                                      ("webp", "image/webp"), ("tiff", "image/tiff")]
            .map { ($0.0, $0.1, try Self.image($0.0, color: "navy")) } + [("pdf", "application/pdf", pdf)]
        for (format, type, bytes) in files {
            let id = try await Self.put(bytes, as: type, token: s.h["alice"].token, s.h)
            let receipt = try await Self.storeUnchecked(id, size: bytes.count, as: type, zone: "home", owner: "alice", s.h)
            let thumb = try await s.web.get("/z/alice/home/r/\(receipt)/t/\(id.hex)")
            checkEqual(thumb.contentType, "image/png", "no thumbnail of the \(format)")
            checkTrue(thumb.body.starts(with: [0x89, 0x50, 0x4E, 0x47]), "\(format): not a PNG")
        }
        // Nothing but the thumbnails themselves was made under the data folder.
        let made = try FileManager.default.subpathsOfDirectory(atPath: s.h.server.data + "/thumbs")
        checkEqual(made.filter { !$0.hasSuffix(".png") && $0.count != 2 && $0 != WebThumbnails.madeByCoderMarker }, [])
    }

    /// The policy alone, without the type check and without a named coder: ImageMagick refuses the
    /// SVG, MVG, TEXT and `@file` readers and any file outside the work folders. Those the system's
    /// own policy lets through do read the secret without ours (so the inputs are the real thing).
    func testTheSandboxPolicyRefusesEveryReaderButTheRasterOnesAndFilesOutsideItsWorkFolders() async throws {
        let folder = TemporaryFolder("receipt-policy")
        let secret = try folder.write("data/blobs/ab/secret", try Self.image("png", color: "red"))
        let sandbox = try XCTUnwrap(ThumbnailSandbox())
        let work = try XCTUnwrap(sandbox.newWork())
        let list = try folder.write("list.txt", secret + "\n")
        let svg = try folder.write("svg", #"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" "#
                                   + #"width="8" height="8"><image xlink:href="\#(secret)" width="8" height="8"/></svg>"#)
        let mvg = try folder.write("mvg", "viewbox 0 0 8 8\nimage over 0,0 8,8 '\(secret)'\n")
        try FileManager.default.copyItem(atPath: svg, toPath: work + "/source")
        let inputs: [(input: String, readWithoutPolicy: Bool)] = [
            (work + "/source", true), ("svg:" + work + "/source", true), (secret, true), ("mvg:" + mvg, true),
            ("text:" + secret, false), ("@" + list, false),
        ]
        for (input, readWithoutPolicy) in inputs {
            if readWithoutPolicy {
                let open = try ReceiptBinary.run([input, "png:" + work + "/open.png"], executable: "/usr/bin/convert")
                checkEqual(open.status, 0, "without the policy, \(input) is read: \(open.stderr)")
            }
            let closed = try ReceiptBinary.run([input, "png:" + work + "/closed.png"], environment: sandbox.environment(work: work),
                                               executable: "/usr/bin/convert")
            checkNotEqual(closed.status, 0, "the policy let ImageMagick read \(input)")
            checkFalse(FileManager.default.fileExists(atPath: work + "/closed.png"), input)
        }
        let png = try write(try Self.image("png", color: "blue"), to: work + "/source.png")
        let made = try ReceiptBinary.run(["png:" + png + "[0]", "-thumbnail", "16x16", "png:" + work + "/thumb.png"],
                                         environment: sandbox.environment(work: work), executable: "/usr/bin/convert")
        checkEqual(made.status, 0, "the policy must let a PNG be thumbnailed: \(made.stderr)")
    }

    // MARK: Helpers

    func write(_ bytes: [UInt8], to path: String) throws -> String {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A small image of one colour in `format`, made by ImageMagick (with no policy of ours).
    static func image(_ format: String, color: String) throws -> [UInt8] {
        let scratch = TemporaryFolder("receipt-image")
        let path = scratch.file("image." + format)
        let made = try ReceiptBinary.run(["-size", "24x24", "xc:" + color, format + ":" + path], executable: "/usr/bin/convert")
        guard made.status == 0 else { throw HarnessError("convert could not make a \(format): \(made.stderr)") }
        return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    static func call(_ method: HTTPMethod, _ path: String, type: String?, body: [UInt8], token: String,
                     _ h: Household) async throws -> Raw.Answer {
        var request = HTTPClientRequest(url: h.server.url + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        if let type { request.headers.add(name: "Content-Type", value: type) }
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        return Raw.Answer(status: Int(response.status.code), body: Array(try await response.body.collect(upTo: 1 << 20).readableBytesView))
    }

    static func put(_ bytes: [UInt8], as type: String?, token: String, _ h: Household) async throws -> BlobID {
        let id = SHA256Hasher.hash(bytes)
        let answer = try await call(.PUT, "/v1/blobs/\(id.hex)", type: type, body: bytes, token: token, h)
        guard answer.status == 204 else { throw HarnessError("PUT \(type ?? "untyped"): \(answer.status) \(answer.text)") }
        return id
    }

    static func record(_ id: BlobID, size: Int, as type: String) -> WirePushRecord {
        WirePushRecord(id: UUID().uuidString.lowercased(), baseTag: nil, receipt: WireReceipt(
            merchant: "Shop", date: nil, total: nil, currency: nil, category: nil, note: nil, tags: [],
            attachments: [WireAttachment(sha256: id.hex, size: Int64(size), filename: "scan", mediaType: type)],
            createdAt: 1, modifiedAt: 1))
    }

    static func pushAnswer(_ id: BlobID, size: Int, as type: String, to zone: String, token: String,
                           _ h: Household) async throws -> Raw.Answer {
        try await h.raw.json(.POST, "/v1/zones/\(zone)/push", token: token, WirePushRequest(records: [record(id, size: size, as: type)]))
    }

    static func push(_ id: BlobID, size: Int, as type: String, to zone: String, token: String, _ h: Household) async throws {
        let answer = try await pushAnswer(id, size: size, as: type, to: zone, token: token, h)
        let saved = try? JSONDecoder().decode(WirePushResponse.self, from: Data(answer.body)).results.first?.status
        guard answer.status == 200, saved == .saved else { throw HarnessError("push \(type): \(answer.status) \(answer.text)") }
    }

    /// A receipt written into the server's catalog directly, past the routes' checks; its id.
    static func storeUnchecked(_ id: BlobID, size: Int, as type: String, zone: String, owner: String,
                               _ h: Household) async throws -> String {
        let store = try await ServerDatabase(Household.database).open(dataPath: h.server.data)
        let record = record(id, size: size, as: type)
        do {
            guard let caller = try await store.authenticate(token: h[owner].token) else { throw HarnessError("no \(owner)") }
            let result = try await store.push(WirePushRequest(records: [record]), owner: owner, name: zone, caller: caller)
            try await store.close()
            guard result.results.first?.status == .saved else { throw HarnessError("the receipt was not stored: \(result)") }
            return record.id
        } catch {
            try? await store.close()
            throw error
        }
    }
}

/// A browser's session with the web view: signed in with a password, holding the CSRF token.
struct WebSignIn {
    let base: String
    let cookie: String
    let csrf: String

    struct Answer {
        let status: Int
        let contentType: String?
        let body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    static let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))

    static func start(_ h: Household, account: String) async throws -> WebSignIn {
        let store = try await ServerDatabase(Household.database).open(dataPath: h.server.data)
        try await store.setPassword(account: account, password: "correct horse")
        try await store.close()
        var signin = HTTPClientRequest(url: h.server.url + "/signin")
        signin.method = .POST
        signin.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        signin.body = .bytes(ByteBuffer(string: "account=\(account)&password=correct+horse"))
        let signed = try await client.execute(signin, timeout: .seconds(60))
        guard signed.status.code == 303, let cookie = signed.headers["Set-Cookie"].first?.split(separator: ";").first else {
            throw HarnessError("sign-in answered \(signed.status.code)")
        }
        let partial = WebSignIn(base: h.server.url, cookie: String(cookie), csrf: "")
        let html = try await partial.get("/").text
        let marker = #"name="csrf" value=""#
        guard let csrf = html.range(of: marker).map({ String(html[$0.upperBound...].prefix { $0 != "\"" }) }) else {
            throw HarnessError("no CSRF token on the zones page: \(html)")
        }
        return WebSignIn(base: h.server.url, cookie: String(cookie), csrf: csrf)
    }

    func get(_ path: String) async throws -> Answer {
        var request = HTTPClientRequest(url: base + path)
        request.headers.add(name: "Cookie", value: cookie)
        return try await answer(request)
    }

    /// One file, as a browser sends it (`type` empty: no Content-Type for the part).
    func upload(_ zone: String, name: String, type: String, bytes: [UInt8]) async throws -> Answer {
        let boundary = "receipt-test-boundary"
        var body = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n\(csrf)\r\n".utf8)
        body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"files\"; filename=\"\(name)\"\r\n".utf8)
        body += Array((type.isEmpty ? "" : "Content-Type: \(type)\r\n").utf8) + Array("\r\n".utf8)
        body += bytes + Array("\r\n--\(boundary)--\r\n".utf8)
        var request = HTTPClientRequest(url: base + "/z/\(zone)/upload")
        request.method = .POST
        request.headers.add(name: "Cookie", value: cookie)
        request.headers.add(name: "Content-Type", value: "multipart/form-data; boundary=\(boundary)")
        request.body = .bytes(ByteBuffer(bytes: body))
        return try await answer(request)
    }

    func answer(_ request: HTTPClientRequest) async throws -> Answer {
        let response = try await Self.client.execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 16 << 20)
        return Answer(status: Int(response.status.code), contentType: response.headers["Content-Type"].first,
                      body: Array(body.readableBytesView))
    }
}
