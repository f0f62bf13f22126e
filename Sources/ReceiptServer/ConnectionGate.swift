import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes

/// Connections served at once, in all (`ServerLimits.maxConnections`) and per client address
/// (`maxConnectionsPerAddress`; an IPv6 client by its /64, which one household's devices share). A
/// connection over either cap is closed as soon as it is accepted: a full server refuses at once
/// instead of holding newcomers in its listen backlog, where one client's idle sockets would make
/// every other client wait.
final class ConnectionGate: Sendable {
    let total: Int
    let perAddress: Int
    private let open = NIOLockedValueBox<(all: Int, byAddress: [String: Int])>((0, [:]))

    init(total: Int, perAddress: Int) {
        self.total = total
        self.perAddress = perAddress
    }

    /// Counts the connection in when both caps allow it.
    func admit(_ key: String) -> Bool {
        open.withLockedValue { open in
            let mine = open.byAddress[key, default: 0]
            guard open.all < total, mine < perAddress else { return false }
            open.all += 1
            open.byAddress[key] = mine + 1
            return true
        }
    }

    func release(_ key: String) {
        open.withLockedValue { open in
            open.all -= 1
            let left = open.byAddress[key, default: 1] - 1
            open.byAddress[key] = left > 0 ? left : nil
        }
    }

    /// The address a cap counts: an IPv4 address whole, an IPv6 one by its first 64 bits (an
    /// IPv4-mapped one as the IPv4 address it is).
    static func key(_ address: SocketAddress?) -> String {
        guard case .v6(let v6)? = address else { return address?.ipAddress ?? "unknown" }
        let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
        let mapped = bytes[..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
        if mapped { return address?.ipAddress ?? "unknown" }
        return bytes[..<8].map { String($0, radix: 16) }.joined(separator: ":") + "::/64"
    }
}

/// The gate at each connection: admitted when it becomes active, released when it closes.
final class ConnectionGateHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart

    let gate: ConnectionGate
    private var admitted: String?
    private var decided = false

    init(gate: ConnectionGate) {
        self.gate = gate
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { decide(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        decide(context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        releaseSlot()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        releaseSlot()
    }

    private func decide(_ context: ChannelHandlerContext) {
        guard !decided else { return }
        decided = true
        let key = ConnectionGate.key(context.channel.remoteAddress)
        if gate.admit(key) {
            admitted = key
        } else {
            context.close(promise: nil)
        }
    }

    private func releaseSlot() {
        if let admitted { gate.release(admitted) }
        admitted = nil
    }
}
