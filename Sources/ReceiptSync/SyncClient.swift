import AsyncHTTPClient
import BlobStore
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
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
    /// How the server's certificate is verified; nil: the system's trust store.
    let tls: TLSConfiguration?
    static let jsonTimeout: TimeAmount = .seconds(120)
    static let blobTimeout: TimeAmount = .hours(6)

    /// The process's client: a connection that cannot be made (refused, or a TLS certificate that
    /// is not accepted) fails the request at once instead of being retried until its deadline, and
    /// redirects are not followed (the bearer token goes to the configured server only). It lives
    /// as long as the process, like `HTTPClient.shared`.
    public static let defaultHTTP: HTTPClient = {
        var config = HTTPClient.Configuration.singletonConfiguration
        config.connectionPool.retryConnectionEstablishment = false
        config.redirectConfiguration = .disallow
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: config)
    }()

    public init(baseURL: String, token: String, tls: TLSConfiguration? = nil, http: HTTPClient = SyncClient.defaultHTTP) {
        var url = baseURL
        while url.hasSuffix("/") { url.removeLast() }
        self.baseURL = url
        self.token = token
        self.tls = tls
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
        request.tlsConfiguration = tls
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: WireProtocol.revisionHeader, value: String(WireProtocol.revision))
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

    /// Sends a request; a 429 is waited out as its `Retry-After` says (at most 60 s a time, 8 times)
    /// and the request sent again (bodies are re-readable sequences).
    func execute(_ request: HTTPClientRequest, timeout: TimeAmount, path: String) async throws -> HTTPClientResponse {
        do {
            for _ in 0..<8 {
                let response = try await http.execute(request, timeout: timeout)
                guard response.status == .tooManyRequests else { return response }
                let wait = min(60, max(1, response.headers.first(name: "Retry-After").flatMap { Int($0) } ?? 1))
                _ = try? await response.body.collect(upTo: 1 << 20)
                try await Task.sleep(nanoseconds: UInt64(wait) * 1_000_000_000)
            }
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
            ("Network is unreachable", "the network is unreachable"),
            ("CERTIFICATE_VERIFY_FAILED", "its TLS certificate was refused: not signed by a CA this vault trusts, "
                + "expired or not yet valid, or not the pinned certificate (see `receipt remote set --ca-file/--pin`)"),
            ("failedToValidateHostname", "its TLS certificate was refused: it is not made for this host name"),
            ("WRONG_VERSION_NUMBER", "the TLS handshake failed (is the server serving HTTPS?)"),
            ("sslHandshake", "the TLS handshake failed"), ("handshakeFailed", "the TLS handshake failed"),
        ]
        for (needle, plain) in known where text.contains(needle) { return plain }
        return text
    }

    static func check(_ status: HTTPResponseStatus, _ body: Data, method: HTTPMethod, path: String, baseURL: String) throws {
        guard !(200..<300).contains(Int(status.code)) else { return }
        if status.code == 401 {
            let said = (try? JSONDecoder().decode(WireError.self, from: body)).map { " (\($0.error))" } ?? ""
            throw SyncError("the server at \(baseURL) refused this vault's token\(said): a wrong token, or one rotated or "
                + "revoked. Ask for a new one (`receipt server token-rotate` or `token-add` on the server) and set it with "
                + "`receipt remote set \(baseURL) --account NAME --token NEW`", status: 401)
        }
        if let error = try? JSONDecoder().decode(WireError.self, from: body) {
            throw SyncError("the server refused \(method) \(path): \(error.error)", status: Int(status.code))
        }
        throw SyncError("the server at \(baseURL) answered \(method) \(path) with HTTP \(status.code)", status: Int(status.code))
    }

    struct Empty: Codable {}

    // MARK: Endpoints

    public func account() async throws -> String {
        try await accountInfo().account
    }

    /// The account and the server's protocol revision (nil: a server before revision 3).
    public func accountInfo() async throws -> WireAccount {
        try await call(.GET, "/v1/account", body: Empty?.none, as: WireAccount.self)
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

    /// Uploads blobs in one request (`POST /v1/blobs/bundle`), each file streamed piece by piece
    /// and in-memory bytes loaded only when their turn comes. The server verifies every blob against
    /// its address and keeps none of the bundle unless all verify.
    public func upload(_ parts: [BundlePart]) async throws {
        let path = "/v1/blobs/bundle"
        var request = request(.POST, path)
        request.headers.add(name: "Content-Type", value: WireBundle.contentType)
        let length = parts.reduce(0) { $0 + Int64(WireBundle.headerSize) + $1.size }
        request.body = .stream(BundleChunks(parts: parts), length: .known(length))
        let response = try await execute(request, timeout: Self.blobTimeout, path: path)
        let body = try await response.body.collect(upTo: 1 << 20)
        try Self.check(response.status, Data(body.readableBytesView), method: .POST, path: path, baseURL: baseURL)
    }

    /// Downloads blobs in one request (`POST /v1/blobs/fetch`), in the order of `ids`, hashing each
    /// on the way: into memory when it has fewer than `inMemoryBelow` bytes, else into a new staging
    /// file of `store` (not durable until installed). Nothing unverified is ever kept: unless every
    /// blob arrives whole and hashes to its address, `SyncError` is thrown and no staging file is left.
    public func download(_ ids: [BlobID], into store: some BlobStaging, inMemoryBelow: Int64 = 0) async throws -> [DownloadedBlob] {
        let path = "/v1/blobs/fetch"
        var request = request(.POST, path)
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(WireFetchRequest(blobs: ids.map(\.hex)))))
        let response = try await execute(request, timeout: Self.blobTimeout, path: path)
        if response.status != .ok {
            let body = try await response.body.collect(upTo: 1 << 20)
            try Self.check(response.status, Data(body.readableBytesView), method: .POST, path: path, baseURL: baseURL)
            throw SyncError("the server answered POST \(path) with HTTP \(response.status.code)", status: Int(response.status.code))
        }
        var results: [DownloadedBlob] = []
        var complete = false
        var incoming: IncomingBlob?
        defer {
            incoming?.discard()
            if !complete { for case .staged(let file) in results { store.discard(file) } }
        }
        var reader = WireBundleReader()
        var bytes: [UInt8] = []
        do {
            for try await buffer in response.body {
                try buffer.withUnsafeReadableBytes { piece in
                    try reader.feed(piece) { event in
                        switch event {
                        case .begin(let digest, let length):
                            let id = BlobID(digest: digest)
                            guard results.count < ids.count, id == ids[results.count] else {
                                throw SyncError("the server sent blob \(id), which was not asked for at that place: it was dropped")
                            }
                            if length >= inMemoryBelow { incoming = try store.incoming() }
                        case .bytes(let piece):
                            if let incoming { try incoming.append(piece) } else { bytes.append(contentsOf: piece) }
                        case .end:
                            let expected = ids[results.count]
                            if let blob = incoming {
                                incoming = nil
                                do {
                                    results.append(.staged(try blob.finish(expected: expected)))
                                } catch BlobError.mismatch(_, let actual) {
                                    throw Mismatch(id: expected, actual: actual)
                                }
                            } else {
                                let actual = SHA256Hasher.hash(bytes)
                                guard actual == expected else { throw Mismatch(id: expected, actual: actual) }
                                results.append(.bytes(bytes))
                                bytes = []
                            }
                        }
                    }
                }
            }
            guard reader.atBoundary, results.count == ids.count else {
                throw SyncError("the download of \(ids.count) blob(s) from \(baseURL) was cut off")
            }
        } catch let mismatch as Mismatch {
            throw SyncError("the server sent bytes for blob \(mismatch.id) that hash to \(mismatch.actual): they were dropped")
        } catch let error as WireBundleError {
            throw SyncError("the server at \(baseURL) sent a malformed bundle: \(error.description)")
        } catch let error as PathError {
            throw error
        } catch let error as SyncError {
            throw error
        } catch {
            throw SyncError("the download of \(ids.count) blob(s) from \(baseURL) was cut off: \(Self.reason(error))")
        }
        complete = true
        return results
    }

    private struct Mismatch: Error {
        let id: BlobID
        let actual: BlobID
    }
}

/// One blob of a bundle to upload: its address, its original size, and where its original bytes are.
public struct BundlePart: Sendable {
    public enum Source: Sendable {
        /// A file holding exactly the original bytes.
        case file(String)
        /// Bytes loaded when the bundle reaches this blob (so a bundle's small blobs are not all in memory).
        case load(@Sendable () throws -> [UInt8])
    }

    public let id: BlobID
    public let size: Int64
    public let source: Source

    public init(id: BlobID, size: Int64, source: Source) {
        self.id = id
        self.size = size
        self.source = source
    }
}

/// A downloaded, verified blob: small ones in memory, others staged in the store.
public enum DownloadedBlob: Sendable {
    case bytes([UInt8])
    case staged(StagedBlob)
}

/// A bundle's bytes (docs/PROTOCOL.md) as an async sequence of buffers of about 1 MiB, read from the
/// parts' sources as the request is sent. A source that does not hold the announced size fails the
/// request: the server then keeps nothing of the bundle.
struct BundleChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let parts: [BundlePart]

    struct AsyncIterator: AsyncIteratorProtocol {
        let parts: [BundlePart]
        var index = 0
        var file: (reader: ChunkedFileReader, part: BundlePart, left: Int64)?

        /// A file's pieces are read straight into the buffers that go out; headers and loaded bytes
        /// are gathered up to 1 MiB.
        mutating func next() async throws -> ByteBuffer? {
            if let (reader, part, left) = file {
                var piece = ByteBufferAllocator().buffer(capacity: Int(Swift.min(Int64(BlobStore.chunkSize), left + 1)))
                let n = try piece.writeWithUnsafeMutableBytes(minimumWritableBytes: 0) { try reader.read(into: $0) }
                guard n <= left, n > 0 || left == 0 else { throw Self.changed(part) }
                file = n == 0 ? nil : (reader, part, left - Int64(n))
                if n > 0 { return piece }
            }
            var out = ByteBuffer()
            while out.readableBytes < 1 << 20, file == nil, index < parts.count {
                let part = parts[index]
                index += 1
                out.writeBytes(WireBundle.header(sha256: part.id.digest, length: part.size))
                switch part.source {
                case .file(let path):
                    file = (try ChunkedFileReader(path: path), part, part.size)
                case .load(let load):
                    let bytes = try load()
                    guard bytes.count == part.size else { throw Self.changed(part) }
                    out.writeBytes(bytes)
                }
            }
            if out.readableBytes > 0 { return out }
            return file == nil ? nil : try await next()
        }

        static func changed(_ part: BundlePart) -> SyncError {
            SyncError("blob \(part.id) is not the size the vault records (\(part.size) bytes): run `receipt fsck`")
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(parts: parts) }
}
