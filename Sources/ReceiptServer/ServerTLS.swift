import BlobStore
import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOSSL
import SwiftASN1
import X509
#if canImport(Glibc)
import Glibc
#endif

/// The PEM files of a server's certificate (chain, leaf first) and private key.
public struct TLSFiles: Sendable {
    public let certificate: String
    public let key: String

    public init(certificate: String, key: String) {
        self.certificate = certificate
        self.key = key
    }
}

/// The certificate and key the server presents, read again from their files on SIGHUP. Every TLS
/// handshake asks for the current pair (swift-nio-ssl's context callback), so a new certificate
/// serves new connections at once while connections already open go on undisturbed.
public final class TLSIdentity: Sendable {
    public let files: TLSFiles
    private let current: NIOLockedValueBox<(chain: [NIOSSLCertificate], key: NIOSSLPrivateKey)>

    public init(files: TLSFiles) throws {
        self.files = files
        current = NIOLockedValueBox(try Self.load(files))
    }

    /// Reads both files and checks that they make a usable pair; throws (keeping the pair in use)
    /// when they do not.
    public func reload() throws {
        let pair = try Self.load(files)
        current.withLockedValue { $0 = pair }
    }

    static let tls12Suites = ["ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
                              "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305"]
        .joined(separator: ":")

    static func load(_ files: TLSFiles) throws -> (chain: [NIOSSLCertificate], key: NIOSSLPrivateKey) {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(files.certificate)
        } catch {
            throw ServerError.bad("cannot read a PEM certificate from \(files.certificate): \(error)")
        }
        guard !chain.isEmpty else { throw ServerError.bad("\(files.certificate) holds no PEM certificate") }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: files.key, format: .pem)
        } catch {
            throw ServerError.bad("cannot read a PEM private key from \(files.key): \(error)")
        }
        // A context checks that the key belongs to the leaf certificate.
        do {
            _ = try NIOSSLContext(configuration: .makeServerConfiguration(certificateChain: chain.map { .certificate($0) },
                                                                          privateKey: .privateKey(key)))
        } catch {
            throw ServerError.bad("the key in \(files.key) does not belong to the certificate in \(files.certificate)")
        }
        return (chain, key)
    }

    /// TLS 1.2 with forward-secret AEAD suites only (no CBC, no RSA key exchange), and TLS 1.3
    /// (whose suites all are); the current certificate presented at each handshake.
    public func configuration() -> TLSConfiguration {
        let (chain, key) = current.withLockedValue { $0 }
        var config = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) },
                                                              privateKey: .privateKey(key))
        config.minimumTLSVersion = .tlsv12
        config.cipherSuites = Self.tls12Suites
        let current = self.current
        config.sslContextCallback = { _, promise in
            let (chain, key) = current.withLockedValue { $0 }
            var override = NIOSSLContextConfigurationOverride()
            override.certificateChain = chain.map { .certificate($0) }
            override.privateKey = .privateKey(key)
            promise.succeed(override)
        }
        return config
    }
}

/// Certificates made here: a self-signed one for a household without a CA (`receipt server cert`),
/// and, for tests, a CA and the certificates it signs. ECDSA P-256, SHA-256.
public struct MadeCertificate: Sendable {
    public let certificatePEM: String
    public let keyPEM: String
    /// The SHA-256 of the certificate's DER bytes, as 64 lowercase hex digits.
    public let sha256: String
    let certificate: Certificate
    let key: P256.Signing.PrivateKey

    /// `hosts`: DNS names or IP addresses the certificate is valid for. Self-signed unless `issuer`
    /// is given; a leaf for TLS servers only (`CA:FALSE`, server authentication) unless `isCA`.
    public static func make(hosts: [String], commonName: String? = nil, isCA: Bool = false,
                            notBefore: Date = Date().addingTimeInterval(-3600),
                            notAfter: Date = Date().addingTimeInterval(10 * 365 * 86_400),
                            issuer: MadeCertificate? = nil) throws -> MadeCertificate {
        let key = P256.Signing.PrivateKey()
        let subject = try DistinguishedName {
            OrganizationName("receipt")
            CommonName(commonName ?? hosts.first ?? "receipt")
        }
        let names: [GeneralName] = hosts.map { host in
            if let bytes = IPAddress.bytes(host) { return .ipAddress(ASN1OctetString(contentBytes: ArraySlice(bytes))) }
            return .dnsName(host)
        }
        let extensions = try Certificate.Extensions {
            Critical(isCA ? BasicConstraints.isCertificateAuthority(maxPathLength: nil) : BasicConstraints.notCertificateAuthority)
            // A self-signed leaf has no key usage: BoringSSL, which a pinning vault trusts it with
            // as its own root, takes a certificate whose key usage lacks certificate signing for
            // one that cannot have signed itself.
            if isCA || issuer != nil { Critical(KeyUsage(digitalSignature: true, keyCertSign: isCA)) }
            try ExtendedKeyUsage([.serverAuth])
            if !names.isEmpty { SubjectAlternativeNames(names) }
        }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: notBefore, notValidAfter: notAfter,
            issuer: issuer?.certificate.subject ?? subject, subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256, extensions: extensions,
            issuerPrivateKey: .init(issuer?.key ?? key))
        var der = DER.Serializer()
        try der.serialize(certificate)
        return MadeCertificate(certificatePEM: try certificate.serializeAsPEM().pemString + "\n", keyPEM: key.pemRepresentation + "\n",
                               sha256: SHA256Hasher.hash(der.serializedBytes).hex, certificate: certificate, key: key)
    }

    /// Writes the certificate and key (0600, created anew) to `certificatePath` and `keyPath`.
    public func write(certificatePath: String, keyPath: String) throws {
        for (path, text) in [(certificatePath, certificatePEM), (keyPath, keyPEM)] {
            let staging = path + "." + SecureRandom.hex(4) + ".tmp"
            do {
                try FileDescriptor.with(staging, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600) { fd in
                    try fd.write(Array(text.utf8))
                    try fd.sync()
                }
                try FileSystem.rename(staging, path)
            } catch let error as PathError {
                try? FileSystem.remove(staging)
                throw ServerError(.failed, "cannot write \(path): \(error.message)")
            }
        }
    }
}

/// IP address literals (v4 dotted quad, v6 with or without brackets) as their bytes.
public enum IPAddress {
    public static func bytes(_ text: String) -> [UInt8]? {
        var host = text
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }
}
