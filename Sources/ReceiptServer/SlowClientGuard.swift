import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// How slowly a client may send before its connection is closed (see `SlowClientGuard`).
public struct ClientPace: Sendable {
    /// Longest wait for a complete request head, counted from the connection's opening (so the TLS
    /// handshake is within it) or from the end of its previous response (so it is also how long an
    /// idle keep-alive connection stays open).
    public var headTimeout: TimeAmount
    /// While the server waits for a request body, at least `minBodyBytes` must arrive in every
    /// `bodyWindow` of waiting.
    public var bodyWindow: TimeAmount
    public var minBodyBytes: Int

    public init(headTimeout: TimeAmount = .seconds(10), bodyWindow: TimeAmount = .seconds(20), minBodyBytes: Int = 4096) {
        self.headTimeout = headTimeout
        self.bodyWindow = bodyWindow
        self.minBodyBytes = minBodyBytes
    }
}

/// Closes connections whose client holds them open by sending slowly ("slowloris"): a request head
/// that is not complete within `headTimeout`, or a body that brings fewer than `minBodyBytes` in a
/// `bodyWindow` during which the server was asking for more. Time the server itself spends (handling
/// a request, or not reading because a handler is busy: NIO passes no `read` down then) never counts
/// against the client. Hummingbird's own idle timeout cannot do this: any byte of a body resets it,
/// so one byte a minute holds a connection forever.
/// An answer sent before its request's body has arrived (a 413 for a declared length over the limit,
/// a 401) closes the connection `linger` after it, unless the body ends meanwhile: what the client
/// still sends is read and dropped until then, so a client sending a modest body reads the answer
/// rather than a reset, and one sending gigabytes is cut off. (No `Connection: close` is sent: an
/// HTTP client that sees it stops the upload and reports the broken write, not the answer.)
final class SlowClientGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let pace: ClientPace
    private let tick: TimeAmount
    private var heads = 0, ends = 0, answered = 0
    private var awaitingSince: NIODeadline? = .now()
    private var readPending = false
    private var waited: TimeAmount = .zero
    private var windowBytes = 0
    private var timer: Scheduled<Void>?
    private var lingering: Scheduled<Void>?
    static let linger = TimeAmount.seconds(2)

    init(pace: ClientPace) {
        self.pace = pace
        // Ticks fine enough that a limit is enforced within a tenth of its length.
        tick = .nanoseconds(max(10_000_000, min(pace.headTimeout.nanoseconds, pace.bodyWindow.nanoseconds) / 10))
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { schedule(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        schedule(context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        readPending = false
        switch unwrapInboundIn(data) {
        case .head:
            heads += 1
            awaitingSince = nil
            waited = .zero
            windowBytes = 0
        case .body(let bytes):
            windowBytes += bytes.readableBytes
        case .end:
            ends += 1
            lingering?.cancel()
            lingering = nil
            if answered >= heads { awaitingSince = .now() }
        }
        context.fireChannelRead(data)
    }

    func read(context: ChannelHandlerContext) {
        readPending = true
        context.read()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .end:
            answered += 1
            if heads == ends && answered >= heads { awaitingSince = .now() }
            if heads > ends && lingering == nil {
                lingering = context.eventLoop.assumeIsolated().scheduleTask(in: Self.linger) { context.close(promise: nil) }
            }
        case .head, .body:
            break
        }
        context.write(data, promise: promise)
    }

    private func schedule(_ context: ChannelHandlerContext) {
        guard timer == nil else { return }
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: tick) { [self] in
            timer = nil
            if check() { schedule(context) } else { context.close(promise: nil) }
        }
    }

    /// False when the client has been too slow.
    private func check() -> Bool {
        if heads > ends {
            if readPending { waited = waited + tick }
            if waited >= pace.bodyWindow {
                if windowBytes < pace.minBodyBytes { return false }
                waited = .zero
                windowBytes = 0
            }
        } else if let since = awaitingSince, NIODeadline.now() - since >= pace.headTimeout {
            return false
        }
        return true
    }
}
