import BlobStore
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import X509

/// How a vault verifies its `https://` server: the system's trust store, a CA given at
/// `remote set --ca-file`, or one pinned certificate (`--pin SHA256`, for a household without a CA).
/// The CA's or the pinned certificate's PEM is kept in the vault, so the file given may go away.
public enum RemoteTrust: Sendable, Equatable {
    case system
    case ca(pem: String)
    /// The server's own certificate, fetched once at `remote set` and kept only when its SHA-256 is
    /// the pin. Afterwards it is the only trust root: the server must present exactly it (the host
    /// name is not checked: the pin names the certificate, whatever name the server is reached by).
    case pinned(sha256: String, pem: String)

    /// The TLS configuration of requests to the server; nil for AsyncHTTPClient's default (system
    /// trust store, host name checked).
    func tlsConfiguration() throws -> TLSConfiguration? {
        var config = TLSConfiguration.makeClientConfiguration()
        config.minimumTLSVersion = .tlsv12
        switch self {
        case .system:
            return nil
        case .ca(let pem):
            config.trustRoots = .certificates(try Self.certificates(pem, what: "the CA certificate kept for the remote"))
        case .pinned(_, let pem):
            config.trustRoots = .certificates(try Self.certificates(pem, what: "the pinned certificate kept for the remote"))
            config.certificateVerification = .noHostnameVerification
        }
        return config
    }

    static func certificates(_ pem: String, what: String) throws -> [NIOSSLCertificate] {
        guard let certificates = try? NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)), !certificates.isEmpty else {
            throw SyncError("\(what) is not a PEM certificate: run `receipt remote set` again")
        }
        return certificates
    }

    /// Reads a CA file for `--ca-file`, checking it holds at least one PEM certificate.
    static func readCAFile(_ path: String) throws -> String {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw SyncError("cannot read the CA file \(path)")
        }
        _ = try certificates(text, what: "the CA file \(path)")
        return text
    }

    /// A pin as `server cert` prints it (64 hex digits; colons and upper case, as openssl prints a
    /// fingerprint, are accepted), lowercased; nil when it is not one.
    static func normalizedPin(_ text: String) -> String? {
        let hex = text.lowercased().filter { $0 != ":" }
        guard hex.count == 64, hex.allSatisfy({ $0.isHexDigit && $0.isASCII }) else { return nil }
        return hex
    }

    /// The SHA-256 of a certificate's DER bytes.
    static func fingerprint(_ certificate: NIOSSLCertificate) throws -> String {
        SHA256Hasher.hash(try certificate.toDERBytes()).hex
    }

    /// Connects to `host:port` over TLS and returns the PEM of the certificate the server presents,
    /// only when its SHA-256 is `pin`: the connection is refused (and nothing kept) otherwise.
    static func fetchPinned(host: String, port: Int, pin: String) async throws -> String {
        var config = TLSConfiguration.makeClientConfiguration()
        config.minimumTLSVersion = .tlsv12
        config.certificateVerification = .noHostnameVerification
        let context = try NIOSSLContext(configuration: config)
        let group = MultiThreadedEventLoopGroup.singleton
        let seen = group.any().makePromise(of: [UInt8].self)
        let sni = IPv4or6.isAddress(host) ? nil : host
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(.seconds(15))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = try NIOSSLClientHandler(context: context, serverHostname: sni) { chain, verdict in
                        guard let leaf = chain.first, let der = try? leaf.toDERBytes() else {
                            verdict.succeed(.failed)
                            return
                        }
                        seen.succeed(der)
                        verdict.succeed(SHA256Hasher.hash(der).hex == pin ? .certificateVerified : .failed)
                    }
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
        let channel: Channel
        do {
            channel = try await bootstrap.connect(host: host, port: port).get()
        } catch {
            seen.fail(error)
            throw SyncError("cannot reach the sync server at \(host):\(port) to check its certificate: \(SyncClient.reason(error))")
        }
        // The handshake either shows a certificate or ends the connection.
        channel.closeFuture.whenComplete { _ in seen.fail(SyncError("the server at \(host):\(port) closed the TLS handshake")) }
        let timeout = channel.eventLoop.scheduleTask(in: .seconds(15)) { seen.fail(SyncError("the TLS handshake with \(host):\(port) timed out")) }
        defer {
            timeout.cancel()
            channel.close(promise: nil)
        }
        let der = try await seen.futureResult.get()
        let presented = SHA256Hasher.hash(der).hex
        guard presented == pin else {
            throw SyncError("the server at \(host):\(port) presents a certificate whose SHA-256 is \(presented), not the pinned \(pin): "
                + "nothing was changed (check the fingerprint `receipt server cert` printed)")
        }
        do {
            return try Certificate(derEncoded: der).serializeAsPEM().pemString + "\n"
        } catch {
            throw SyncError("the certificate of the server at \(host):\(port) cannot be read: \(error)")
        }
    }
}

/// Which hosts are this machine: plain `http://` is allowed to them only, unless `--insecure-http`.
/// `localhost`, 127.0.0.0/8 and `::1`, nothing else: a name under `.localhost` is resolved like any
/// other name, by resolvers that may send it anywhere.
enum IPv4or6 {
    static func isAddress(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        return inet_pton(AF_INET, bare, &v4) == 1 || inet_pton(AF_INET6, bare, &v6) == 1
    }

    static func isLoopback(_ host: String) -> Bool {
        let bare = (host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host).lowercased()
        if bare == "localhost" { return true }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, bare, &v6) == 1 {   // ::1 however written
            return withUnsafeBytes(of: &v6) { $0.elementsEqual([UInt8](repeating: 0, count: 15) + [1]) }
        }
        var v4 = in_addr()
        guard inet_pton(AF_INET, bare, &v4) == 1 else { return false }
        return withUnsafeBytes(of: &v4) { $0.first == 127 }
    }
}
