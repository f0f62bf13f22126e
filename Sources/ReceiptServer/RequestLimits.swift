import Foundation
import Hummingbird
import NIOConcurrencyHelpers

/// What a request's handling learned that the access log, outside it, prints: the account.
public final class RequestNote: Sendable {
    let account = NIOLockedValueBox<String?>(nil)
    public init() {}
}

/// One JSON line per request on stderr: time, account, method, route (the matched pattern, e.g.
/// `/v1/blobs/:sha256`, else the path without its query), status, bytes in and out, duration.
/// Never a header, a query, a token or a password.
struct AccessLogMiddleware: RouterMiddleware {
    struct Line: Encodable {
        let time: String
        let account: String?
        let method: String
        let route: String
        let status: Int
        let bytesIn: Int
        let bytesOut: Int
        let ms: Double
    }

    func handle(_ request: Request, context: ServerContext,
                next: (Request, ServerContext) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        do {
            let response = try await next(request, context)
            log(request, context, status: Int(response.status.code), bytesOut: response.body.contentLength ?? 0, since: start)
            return response
        } catch {
            log(request, context, status: Int((error as? HTTPResponseError)?.status.code ?? 500), bytesOut: 0, since: start)
            throw error
        }
    }

    func log(_ request: Request, _ context: ServerContext, status: Int, bytesOut: Int, since start: ContinuousClock.Instant) {
        let elapsed = ContinuousClock.now - start
        let ms = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        let line = Line(time: ISO8601DateFormatter().string(from: Date()), account: context.note.account.withLockedValue { $0 },
                        method: request.method.rawValue, route: context.endpointPath ?? request.uri.path, status: status,
                        bytesIn: request.headers[.contentLength].flatMap { Int($0) } ?? 0, bytesOut: bytesOut,
                        ms: (ms * 10).rounded() / 10)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard var data = try? encoder.encode(line) else { return }
        data.append(0x0A)
        FileHandle.standardError.write(data)
    }
}

/// Requests per token: a bucket of `burst` requests refilled at `perSecond`. A request finding it
/// empty is answered 429 with `Retry-After` (whole seconds until one request is allowed again).
public final class RateLimiter: Sendable {
    let perSecond: Double
    let burst: Double
    private let buckets = NIOLockedValueBox<[Int64: (tokens: Double, at: ContinuousClock.Instant)]>([:])

    public init(perSecond: Double, burst: Int) {
        self.perSecond = perSecond
        self.burst = Double(burst)
    }

    /// nil when the request may go; else the seconds to wait.
    func take(_ key: Int64) -> Int? {
        let now = ContinuousClock.now
        return buckets.withLockedValue { buckets in
            var bucket = buckets[key] ?? (burst, now)
            let elapsed = now - bucket.at
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            bucket.tokens = min(burst, bucket.tokens + seconds * perSecond)
            bucket.at = now
            defer { buckets[key] = bucket }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return nil
            }
            return max(1, Int(((1 - bucket.tokens) / perSecond).rounded(.up)))
        }
    }
}

extension Request {
    /// 413 before any of the body is read when its `Content-Length` is over `limit`; the connection
    /// is then closed unless the body ends within `SlowClientGuard.linger`.
    func refuseBodyOver(_ limit: Int64) throws {
        guard let length = headers[.contentLength].flatMap({ Int64($0) }), length > limit else { return }
        throw ServerError(.tooLarge, "the request body of \(length) bytes is larger than the limit of \(limit) bytes for this route")
    }
}

/// Refuses, on every route, a `Content-Length` over the largest body any route accepts: even a
/// request refused for other reasons (401, 404) sends no such body.
struct BodyLimitMiddleware: RouterMiddleware {
    let limit: Int64

    init(_ limits: ServerLimits) {
        limit = max(limits.maxBlobSize, limits.maxBundleSize, limits.maxWebUpload, Int64(limits.maxPushBody),
                    Int64(limits.maxSmallJSON))
    }

    func handle(_ request: Request, context: ServerContext,
                next: (Request, ServerContext) async throws -> Response) async throws -> Response {
        try request.refuseBodyOver(limit)
        return try await next(request, context)
    }
}
