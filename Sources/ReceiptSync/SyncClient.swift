import AsyncHTTPClient
import BlobStore
import Foundation
import NIOCore
import NIOHTTP1
import ReceiptWire
#if canImport(Glibc)
import Glibc
#endif

/// An error of the sync engine or of the server it talks to, as one sentence.
public struct SyncError: Error, CustomStringConvertible, Sendable {
    /// The HTTP status when the server answered with an error.
    public let status: Int?
    public let message: String

    public init(_ message: String, status: Int? = nil) {
        self.message = message
        self.status = status
    }

    public var description: String { message }
}

/// The HTTP side of the protocol (docs/PROTOCOL.md): one method per endpoint. Every request carries
/// the account's bearer token; blob bodies stream to and from files, never whole into memory.
public struct SyncClient: Sendable {
    public let baseURL: String
    let token: String
    let http: HTTPClient
    static let jsonTimeout: TimeAmount = .seconds(120)
    static let blobTimeout: TimeAmount = .hours(6)

    public init(baseURL: String, token: String, http: HTTPClient = .shared) {
        var url = baseURL
        while url.hasSuffix("/") { url.removeLast() }
        self.baseURL = url
        self.token = token
        self.http = http
    }

    static func escape(_ segment: String) -> String {
        segment.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? segment
    }

    func zonePath(_ owner: String, _ name: String) -> String {
        "/v1/zones/\(Self.escape(owner))/\(Self.escape(name))"
    }

    func request(_ method: HTTPMethod, _ path: String) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        return request
    }

    /// Sends a JSON request and decodes a JSON answer; non-2xx answers become `SyncError` with the
    /// server's sentence.
    func call<Body: Encodable, Answer: Decodable>(_ method: HTTPMethod, _ path: String, body: Body?,
                                                  as: Answer.Type) async throws -> Answer {
        let data = try await send(method, path, body: body)
        do {
            return try JSONDecoder().decode(Answer.self, from: data)
        } catch {
            throw SyncError("the server at \(baseURL) sent an answer to \(method) \(path) that is not the expected JSON")
        }
    }

    @discardableResult
    func send<Body: Encodable>(_ method: HTTPMethod, _ path: String, body: Body?) async throws -> Data {
        var request = request(method, path)
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(body)))
        }
        let response = try await execute(request, timeout: Self.jsonTimeout, path: path)
        let buffer = try await response.body.collect(upTo: 64 << 20)
        let data = Data(buffer.readableBytesView)
        try Self.check(response.status, data, method: method, path: path, baseURL: baseURL)
        return data
    }

    func execute(_ request: HTTPClientRequest, timeout: TimeAmount, path: String) async throws -> HTTPClientResponse {
        do {
            return try await http.execute(request, timeout: timeout)
        } catch let error as SyncError {
            throw error
        } catch {
            throw SyncError("cannot reach the sync server at \(baseURL): \(Self.reason(error))")
        }
    }

    /// A transport error in a few words.
    static func reason(_ error: Error) -> String {
        let text = String(describing: error)
        let known: [(String, String)] = [
            ("Connection refused", "connection refused"), ("connectTimeout", "the connection timed out"),
            ("deadlineExceeded", "the request timed out"), ("readTimeout", "the server stopped answering"),
            ("remoteConnectionClosed", "the server closed the connection"), ("No address", "the host name does not resolve"),
            ("Network is unreachable", "the network is unreachable"), ("sslHandshake", "the TLS handshake failed"),
        ]
        for (needle, plain) in known where text.contains(needle) { return plain }
        return text
    }

    static func check(_ status: HTTPResponseStatus, _ body: Data, method: HTTPMethod, path: String, baseURL: String) throws {
        guard !(200..<300).contains(Int(status.code)) else { return }
        if let error = try? JSONDecoder().decode(WireError.self, from: body) {
            throw SyncError("the server refused \(method) \(path): \(error.error)", status: Int(status.code))
        }
        throw SyncError("the server at \(baseURL) answered \(method) \(path) with HTTP \(status.code)", status: Int(status.code))
    }

    struct Empty: Codable {}

    // MARK: Endpoints

    public func account() async throws -> String {
        try await call(.GET, "/v1/account", body: Empty?.none, as: WireAccount.self).account
    }

    public func zones() async throws -> [WireZone] {
        try await call(.GET, "/v1/zones", body: Empty?.none, as: WireZoneList.self).zones
    }

    public func createZone(owner: String, name: String) async throws {
        try await send(.PUT, zonePath(owner, name), body: Empty?.none)
    }

    public func deleteZone(owner: String, name: String) async throws {
        try await send(.DELETE, zonePath(owner, name), body: Empty?.none)
    }

    public func shares(owner: String, name: String) async throws -> [WireShare] {
        try await call(.GET, zonePath(owner, name) + "/shares", body: Empty?.none, as: WireShareList.self).shares
    }

    public func share(owner: String, name: String, with account: String, role: WireRole) async throws {
        try await send(.PUT, zonePath(owner, name) + "/shares/" + Self.escape(account), body: WireShareRequest(role: role))
    }

    public func unshare(owner: String, name: String, with account: String) async throws {
        try await send(.DELETE, zonePath(owner, name) + "/shares/" + Self.escape(account), body: Empty?.none)
    }

    public func push(owner: String, name: String, records: [WirePushRecord]) async throws -> [WirePushResult] {
        try await call(.POST, zonePath(owner, name) + "/push", body: WirePushRequest(records: records),
                       as: WirePushResponse.self).results
    }

    public func changes(owner: String, name: String, since: String?, limit: Int) async throws -> WireChangesResponse {
        var path = zonePath(owner, name) + "/changes?limit=\(limit)"
        if let since { path += "&since=" + Self.escape(since) }
        return try await call(.GET, path, body: Empty?.none, as: WireChangesResponse.self)
    }

    /// The subset of `blobs` the server wants uploaded before records may reference them.
    public func want(_ blobs: [String]) async throws -> [String] {
        var want: [String] = []
        var rest = blobs[...]
        while !rest.isEmpty {
            let batch = Array(rest.prefix(WireProtocol.maxWantBlobs))
            rest = rest.dropFirst(batch.count)
            want += try await call(.POST, "/v1/blobs/want", body: WireWantRequest(blobs: batch), as: WireWantResponse.self).want
        }
        return want
    }

    /// Uploads the file at `path` (the blob's original bytes) as blob `id`, streaming it.
    public func upload(_ id: BlobID, fileAt path: String) async throws {
        let file = try ChunkedFileReader(path: path)
        var request = request(.PUT, "/v1/blobs/\(id.hex)")
        request.headers.add(name: "Content-Type", value: "application/octet-stream")
        request.body = .stream(FileChunks(file: file), length: .known(try file.size()))
        let response = try await execute(request, timeout: Self.blobTimeout, path: "/v1/blobs/\(id.hex)")
        let body = try await response.body.collect(upTo: 1 << 20)
        try Self.check(response.status, Data(body.readableBytesView), method: .PUT, path: "/v1/blobs/\(id.hex)", baseURL: baseURL)
    }

    /// Uploads in-memory bytes as blob `id`.
    public func upload(_ id: BlobID, bytes: [UInt8]) async throws {
        var request = request(.PUT, "/v1/blobs/\(id.hex)")
        request.headers.add(name: "Content-Type", value: "application/octet-stream")
        request.body = .bytes(ByteBuffer(bytes: bytes))
        let response = try await execute(request, timeout: Self.blobTimeout, path: "/v1/blobs/\(id.hex)")
        let body = try await response.body.collect(upTo: 1 << 20)
        try Self.check(response.status, Data(body.readableBytesView), method: .PUT, path: "/v1/blobs/\(id.hex)", baseURL: baseURL)
    }

    /// Downloads blob `id`, hashing on the way: into memory when the server announces fewer than
    /// `inMemoryBelow` bytes, else into a new staging file of `store` (not durable until installed).
    /// Nothing unverified is ever kept: unless the bytes hash to `id`, `SyncError` is thrown (and the
    /// staging file removed).
    public func download(_ id: BlobID, into store: BlobStore, inMemoryBelow: Int64 = 0) async throws -> DownloadedBlob {
        let path = "/v1/blobs/\(id.hex)"
        let response = try await execute(request(.GET, path), timeout: Self.blobTimeout, path: path)
        if response.status != .ok {
            let body = try await response.body.collect(upTo: 1 << 20)
            try Self.check(response.status, Data(body.readableBytesView), method: .GET, path: path, baseURL: baseURL)
            throw SyncError("the server answered GET \(path) with HTTP \(response.status.code)", status: Int(response.status.code))
        }
        do {
            if let length = response.headers.first(name: "Content-Length").flatMap(Int64.init), length < inMemoryBelow {
                let body = try await response.body.collect(upTo: Int(length))
                let bytes = Array(body.readableBytesView)
                let actual = SHA256Hasher.hash(bytes)
                guard actual == id else { throw Mismatch(actual: actual) }
                return .bytes(bytes)
            }
            let incoming = try store.incoming()
            defer { incoming.discard() }
            for try await buffer in response.body {
                try buffer.withUnsafeReadableBytes { try incoming.append($0) }
            }
            do {
                return .staged(try incoming.finish(expected: id))
            } catch BlobError.mismatch(_, let actual) {
                throw Mismatch(actual: actual)
            }
        } catch let mismatch as Mismatch {
            throw SyncError("the server sent bytes for blob \(id) that hash to \(mismatch.actual): they were dropped")
        } catch let error as BlobIOError {
            throw error
        } catch let error as SyncError {
            throw error
        } catch {
            throw SyncError("the download of blob \(id) from \(baseURL) was cut off: \(Self.reason(error))")
        }
    }

    private struct Mismatch: Error {
        let actual: BlobID
    }
}

/// A downloaded, verified blob: small ones in memory, others staged in the store.
public enum DownloadedBlob: Sendable {
    case bytes([UInt8])
    case staged(StagedBlob)
}

/// A file's bytes as an async sequence of chunk-sized buffers (for streaming uploads).
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let file: ChunkedFileReader

    struct AsyncIterator: AsyncIteratorProtocol {
        let file: ChunkedFileReader
        mutating func next() async throws -> ByteBuffer? {
            let piece = try file.next()
            return piece.isEmpty ? nil : ByteBuffer(bytes: piece)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(file: file) }
}
