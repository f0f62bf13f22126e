import BlobStore
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import ReceiptWire
import ServiceLifecycle
import UnixSignals
#if canImport(Glibc)
import Glibc
#endif

/// The request context: Hummingbird's storage plus the authenticated account.
public struct ServerContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    var account: Account?
    /// Shared with the access log, which wraps the handling that authenticates.
    let note = RequestNote()
    /// The peer's IP address (the web view slows down repeated failed sign-ins per address).
    let remoteAddress: String?

    public init(source: Source) {
        coreContext = .init(source: source)
        account = nil
        remoteAddress = source.channel.remoteAddress?.ipAddress
    }

    func caller() throws -> Account {
        guard let account else { throw ServerError(.unauthenticated, "a valid bearer token is required") }
        return account
    }
}

extension ServerError: HTTPResponseError {
    /// The HTTP status of each kind of refusal: the one place the server's refusals meet HTTP.
    public var code: Int {
        switch kind {
        case .invalid: 400
        case .unauthenticated: 401
        case .forbidden: 403
        case .notFound: 404
        case .conflict: 409
        case .gone: 410
        case .tooLarge: 413
        case .unsupportedType: 415
        case .unprocessable: 422
        case .upgradeRequired: 426
        case .tooManyRequests: 429
        case .overQuota: 507
        case .failed: 500
        case .framework(let status): status
        }
    }

    public var status: HTTPResponse.Status { HTTPResponse.Status(code: code) }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers: HTTPFields = [.contentType: "application/json"]
        if kind == .unauthenticated { headers[.wwwAuthenticate] = "Bearer" }
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        let body = (try? JSONEncoder().encode(WireError(error: message))) ?? Data()
        return Response(status: status, headers: headers,
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }
}

/// Rejects every request to `/v1…` without a valid `Authorization: Bearer TOKEN` (401) and records
/// the caller. It runs before routing, so an unknown path or method is no answer to an outsider.
struct AuthMiddleware: RouterMiddleware {
    let catalog: any ServerStore
    let limiter: RateLimiter?

    func handle(_ request: Request, context: ServerContext,
                next: (Request, ServerContext) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        guard path == "/v1" || path.hasPrefix("/v1/") else { return try await next(request, context) }
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer "),
              let account = try await catalog.authenticate(token: String(header.dropFirst(7))) else {
            throw ServerError(.unauthenticated, "a valid bearer token is required")
        }
        context.note.account.withLockedValue { $0 = account.name }
        if let wait = limiter?.take(account.tokenID) {
            var refusal = ServerError(.tooManyRequests, "too many requests with this token: retry after \(wait) s")
            refusal.retryAfter = wait
            throw refusal
        }
        var context = context
        context.account = account
        return try await next(request, context)
    }
}

/// Turns errors nobody mapped (decoding, I/O, SQLite) into one-sentence JSON answers.
struct ErrorMiddleware: RouterMiddleware {
    func handle(_ request: Request, context: ServerContext,
                next: (Request, ServerContext) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as ServerError {
            throw error
        } catch let error as HTTPError {
            throw ServerError(.framework(Int(error.status.code)), error.body ?? "the request was refused (\(error.status.code))")
        } catch is DecodingError {
            throw ServerError(.invalid, "the request body is not valid JSON of the expected shape")
        } catch {
            context.logger.error("request failed: \(String(describing: error))")
            throw ServerError(.failed, "the server failed to handle the request")
        }
    }
}

/// Limits of a server (docs/PROTOCOL.md, "Limits").
public struct ServerLimits: Sendable {
    /// Largest blob accepted by `PUT /v1/blobs/{sha256}`, in a bundle, or as a file of a web upload.
    public var maxBlobSize: Int64
    /// Largest bundle body (`POST /v1/blobs/bundle`): by default one blob of the largest size with its header.
    public var maxBundleSize: Int64
    /// Largest JSON body of a push (`POST …/push`); other JSON bodies: `maxSmallJSON`.
    public var maxPushBody: Int
    public var maxSmallJSON: Int
    /// Largest web upload (`POST /z/…/upload`), all its files and fields together.
    public var maxWebUpload: Int64
    /// Connections served at once, in all and from one client address (an IPv6 client: its /64);
    /// a connection over either is closed at once (`ConnectionGate`).
    public var maxConnections: Int
    public var maxConnectionsPerAddress: Int
    /// How slowly a client may send a request's head or body before it is dropped.
    public var pace: ClientPace
    /// Requests per second and burst allowed to one token (429 with `Retry-After` beyond); nil: none.
    public var rate: (perSecond: Double, burst: Int)?
    /// One JSON line per request on stderr.
    public var accessLog: Bool
    public init(maxBlobSize: Int64 = 4 << 30, maxBundleSize: Int64? = nil, maxPushBody: Int = 8 << 20,
                maxSmallJSON: Int = 1 << 20, maxWebUpload: Int64 = 1 << 30, maxConnections: Int = 512, maxConnectionsPerAddress: Int = 64,
                pace: ClientPace = ClientPace(), rate: (perSecond: Double, burst: Int)? = (200, 2000), accessLog: Bool = false) {
        self.maxBlobSize = maxBlobSize
        self.maxBundleSize = maxBundleSize ?? maxBlobSize + Int64(WireBundle.headerSize)
        self.maxPushBody = maxPushBody
        self.maxSmallJSON = maxSmallJSON
        self.maxWebUpload = maxWebUpload
        self.maxConnections = maxConnections
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.pace = pace
        self.rate = rate
        self.accessLog = accessLog
    }
}

/// The sync server: an HTTP application over a server data folder.
public enum SyncServer {
    /// Builds the router: every path under `/v1` authenticated before it is matched, so that a
    /// request without a valid token is 401 whatever its path and method; the web view beside it.
    public static func buildRouter(catalog: any ServerStore, limits: ServerLimits = ServerLimits(),
                                   web: WebOptions = WebOptions()) -> Router<ServerContext> {
        let router = Router(context: ServerContext.self)
        if limits.accessLog { router.add(middleware: AccessLogMiddleware()) }
        router.add(middleware: ErrorMiddleware())
        router.add(middleware: BodyLimitMiddleware(limits))
        let limiter = limits.rate.map { RateLimiter(perSecond: $0.perSecond, burst: $0.burst) }
        router.add(middleware: AuthMiddleware(catalog: catalog, limiter: limiter))
        let v1 = router.group("v1").add(middleware: RevisionMiddleware())
        ZoneRoutes(catalog: catalog, limits: limits).register(v1)
        BlobRoutes(catalog: catalog, limits: limits).register(v1)
        TextRoutes(catalog: catalog, limits: limits).register(v1)
        if let store = catalog as? any WebStore {
            WebRoutes(catalog: store, limits: limits, web: web,
                      thumbnails: WebThumbnails(dataPath: store.blobs.root, store: store.blobs)).register(router)
        }
        return router
    }

    /// Runs the server on `host:port` until SIGINT or SIGTERM (or until the task is cancelled):
    /// then stops accepting, lets requests in flight finish, and closes the catalog.
    /// `onRunning` receives the bound port (useful with port 0).
    /// With `tls`, serves HTTPS only, and SIGHUP reads the certificate and key again (new connections
    /// get the new certificate; none is dropped; files that do not make a usable pair are logged and
    /// the pair in use is kept). Without, SIGHUP is logged and changes nothing.
    /// With a PostgreSQL `database`, any number of processes may serve the same database and data folder.
    public static func run(dataPath: String, database: ServerDatabase = .embedded, host: String, port: Int,
                           limits: ServerLimits = ServerLimits(), tls: TLSIdentity? = nil,
                           shutdownSignals: [UnixSignal] = [.sigterm, .sigint], logger: Logger,
                           onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let catalog = try await database.open(dataPath: dataPath)
        // One server per embedded catalog: the lock is held until the process ends. Processes over
        // one PostgreSQL database share the data folder (the database serializes what must be).
        let taken = Result {
            database.isShared ? nil : try ServerRules.exclusiveLock(
                FileSystem.join(dataPath, "server.lock"),
                held: "another receipt server is already running on the data folder \(dataPath)")
        }
        if case .failure = taken { try? await catalog.close() }
        let lock = try taken.get()
        defer { lock?.close() }
        // Each blob of a bundle being received holds a staging file open until the bundle is installed
        // (up to WireBundle.maxBlobs per request): a soft limit of 1,024 descriptors would not go far.
        var files = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &files) == 0 && files.rlim_cur < files.rlim_max {
            files.rlim_cur = min(files.rlim_max, 1 << 16)
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &files)
        }
        // Staging files of a server that died mid-upload: nothing refers to them.
        for file in (try? catalog.blobs.interimFiles()) ?? [] where !file.owned { try? FileSystem.remove(file.path) }
        // SIGHUP is trapped before the server listens, with TLS or without: the service unit's
        // ExecReload sends it, and its default action would stop a plain-HTTP server.
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        let reloads = Task {
            for await _ in hangups {
                guard let identity = tls else {
                    logger.notice("SIGHUP: serving plain HTTP, there is no TLS certificate to read again")
                    continue
                }
                do {
                    try identity.reload()
                    logger.notice("reloaded the TLS certificate \(identity.files.certificate) and key \(identity.files.key)")
                } catch {
                    logger.error("SIGHUP: kept the TLS certificate in use: \(error)")
                }
            }
        }
        defer { reloads.cancel() }
        do {
            // Slow senders are dropped by SlowClientGuard (Hummingbird's idle timeout is reset by any
            // byte of a body, so it cannot); connections over the caps are closed by ConnectionGate.
            let pace = limits.pace
            let gate = ConnectionGate(total: limits.maxConnections, perAddress: limits.maxConnectionsPerAddress)
            let http1 = HTTPServerBuilder.http1(configuration: .init(additionalChannelHandlers: [
                ConnectionGateHandler(gate: gate), SlowClientGuard(pace: pace),
            ]))
            let app = Application(
                router: buildRouter(catalog: catalog, limits: limits, web: WebOptions(secureCookies: tls != nil)),
                server: try tls.map { try .tls(http1, tlsConfiguration: $0.configuration()) } ?? http1,
                configuration: .init(address: .hostname(host, port: port), serverName: "receipt"),
                onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? port) },
                logger: logger)
            let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: shutdownSignals,
                                                          logger: logger))
            try await group.run()
        } catch {
            try? await catalog.close()
            throw error
        }
        try await catalog.close()
    }

    /// Parses `HOST:PORT` (IPv6 as `[::1]:PORT`).
    public static func parseListen(_ text: String) throws -> (host: String, port: Int) {
        var host: Substring
        var portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw ServerError.bad("invalid listen address \(text): use HOST:PORT")
            }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw ServerError.bad("invalid listen address \(text): use HOST:PORT")
            }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, let port = Int(portText), (0...65535).contains(port) else {
            throw ServerError.bad("invalid listen address \(text): use HOST:PORT with a port from 0 to 65535")
        }
        return (String(host), port)
    }
}

/// Path parameters, validated before they reach SQL or the file system.
extension ServerContext {
    func name(_ key: String) throws -> String {
        guard let value = parameters.get(key), WireName.isValid(value) else {
            throw ServerError.bad("invalid \(key) in the path: use 1 to 64 letters, digits, '.', '_' or '-'")
        }
        return value
    }

    func blobID(_ key: String) throws -> BlobID {
        guard let value = parameters.get(key), WireName.isValidBlobAddress(value), let id = BlobID(hex: value) else {
            throw ServerError.bad("invalid blob address in the path: use 64 lowercase hex digits")
        }
        return id
    }
}

extension Request {
    /// The body decoded as JSON, refused with 413 past `limit` bytes.
    func decodeJSON<T: Decodable>(_ type: T.Type, limit: Int) async throws -> T {
        try refuseBodyOver(Int64(limit))
        let buffer: ByteBuffer
        do {
            buffer = try await body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw ServerError(.tooLarge, "the request body is larger than the limit of \(limit) bytes for this route")
        }
        do {
            return try JSONDecoder().decode(type, from: buffer)
        } catch {
            throw ServerError.bad("the request body is not valid JSON of the expected shape")
        }
    }
}

func jsonResponse<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Response {
    let data = try JSONEncoder().encode(value)
    return Response(status: status, headers: [.contentType: "application/json"],
                    body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
}
