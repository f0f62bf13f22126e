import BlobStore
import Foundation
import ReceiptServer
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// HTTPS: the household's sync over TLS (a pinned self-signed certificate, or a CA file), and the
/// certificates a client must refuse: another CA's, one for another host name, an expired one.
final class TLSTests: XCTestCase {
    /// Writes a certificate and key into the folder and returns the identity serving them.
    static func serve(_ made: MadeCertificate, in folder: TemporaryFolder, name: String = "server") throws -> TLSIdentity {
        let files = TLSFiles(certificate: folder.file(name + "-cert.pem"), key: folder.file(name + "-key.pem"))
        try made.write(certificatePath: files.certificate, keyPath: files.key)
        return try TLSIdentity(files: files)
    }

    func testHouseholdSyncsOverTLSWithAPinnedSelfSignedCertificate() async throws {
        let made = try MadeCertificate.make(hosts: ["127.0.0.1"])
        let h = try await Household.start(["alice", "bob"]) { folder in
            (try Self.serve(made, in: folder), ["--pin", made.sha256])
        }
        defer { Task { await h.shutdown() } }
        XCTAssertTrue(h.server.url.hasPrefix("https://"))
        let alice = h["alice"], bob = h["bob"]
        let scan = try h.file("scan.jpg", size: 200_000, seed: 1)
        try await alice.ok(["zone", "create", "household"])
        let id = importedID(try await alice.ok(["import", scan.path, "--zone", "household", "--merchant", "Grocer", "--json"]))
        try await alice.ok(["share", "household", "bob", "--role", "write"])
        let pushed = try await alice.sync()
        XCTAssertEqual(pushed["pushed"] as? Int, 1)
        XCTAssertEqual(pushed["blobsUploaded"] as? Int, 1)
        _ = try await bob.sync()
        let bobs = try await bob.receipts()
        XCTAssertEqual(bobs[id]?["merchant"] as? String, "Grocer")
        try await bob.ok(["cat", scan.sha256])

        // Plain HTTP to the TLS port gets no answer a client could take for the server's.
        let plain = try await CLI.run(["remote", "set", "http://127.0.0.1:\(h.server.port)", "--account", "alice",
                                       "--token", alice.token, "--vault", alice.vault], in: h.folder)
        XCTAssertEqual(plain.status, 0, plain.stderr)
        let refused = try await alice.run(["sync"])
        XCTAssertEqual(refused.status, 1)

        // A wrong pin is refused at `remote set`, which then changes nothing.
        let other = try MadeCertificate.make(hosts: ["127.0.0.1"])
        let wrong = try await bob.run(["remote", "set", h.server.url, "--account", "bob", "--token", bob.token, "--pin", other.sha256])
        XCTAssertEqual(wrong.status, 2)
        XCTAssertTrue(wrong.stderr.contains(made.sha256) && wrong.stderr.contains("pinned"), wrong.stderr)
        checkEqual(try await bob.run(["sync"]).status, 0, "the failed remote set must leave bob's remote as it was")
    }

    func testCAFileVerifiesAndWrongCertificateHostNameAndExpiryAreRefused() async throws {
        let ca = try MadeCertificate.make(hosts: [], commonName: "household CA", isCA: true)
        let good = try MadeCertificate.make(hosts: ["127.0.0.1", "localhost"], issuer: ca)
        let h = try await Household.start(["alice"]) { folder in
            let caFile = try folder.write("ca.pem", ca.certificatePEM)
            return (try Self.serve(good, in: folder), ["--ca-file", caFile])
        }
        defer { Task { await h.shutdown() } }
        let alice = h["alice"]
        try await alice.ok(["import", try h.file("a.pdf", size: 5000, seed: 2).path])
        let first = try await alice.sync()
        XCTAssertEqual(first["pushed"] as? Int, 1)

        // Each bad certificate is served in turn (the identity reads its files again, as on SIGHUP);
        // the vault refuses it and keeps its change pending.
        let identity = try XCTUnwrap(h.server.tls)
        let anotherCA = try MadeCertificate.make(hosts: [], commonName: "someone else's CA", isCA: true)
        let cases: [(String, MadeCertificate)] = [
            ("signed by another CA", try MadeCertificate.make(hosts: ["127.0.0.1"], issuer: anotherCA)),
            ("for another host name", try MadeCertificate.make(hosts: ["nas.example"], issuer: ca)),
            ("expired", try MadeCertificate.make(hosts: ["127.0.0.1"], notBefore: Date().addingTimeInterval(-30 * 86_400),
                                                 notAfter: Date().addingTimeInterval(-86_400), issuer: ca)),
        ]
        try await alice.ok(["import", try h.file("b.pdf", size: 5000, seed: 3).path])
        for (what, bad) in cases {
            try bad.write(certificatePath: identity.files.certificate, keyPath: identity.files.key)
            try identity.reload()
            let refused = try await alice.run(["sync", "--json"])
            XCTAssertEqual(refused.status, 1, "a certificate \(what) was accepted: \(refused.stdout)")
            XCTAssertTrue(refused.stderr.contains("TLS") || refused.stderr.contains("certificate"), "\(what): \(refused.stderr)")
        }
        try good.write(certificatePath: identity.files.certificate, keyPath: identity.files.key)
        try identity.reload()
        let after = try await alice.sync()
        XCTAssertEqual(after["pushed"] as? Int, 1, "the change refused over bad certificates must still be pending")
    }

    func testPlainHTTPIsRefusedToAnyHostButThisMachine() async throws {
        let folder = TemporaryFolder("receipt-tls")
        let vault = folder.file("vault")
        checkEqual(try await CLI.run(["init", "--vault", vault], in: folder).status, 0)
        let token = String(repeating: "ab", count: 32)
        let refused = try await CLI.run(["remote", "set", "http://192.0.2.7:8080", "--account", "a", "--token", token,
                                         "--vault", vault], in: folder)
        XCTAssertEqual(refused.status, 2)
        XCTAssertTrue(refused.stderr.contains("--insecure-http") && refused.stderr.contains("192.0.2.7"), refused.stderr)
        let shown = try await CLI.run(["remote", "show", "--json", "--vault", vault], in: folder)
        XCTAssertNil((shown.json as? [String: Any])?["url"] as? String, "nothing may be set: \(shown.stdout)")
        for url in ["http://127.0.0.1:8080", "http://localhost:8080", "http://[::1]:8080"] {
            let local = try await CLI.run(["remote", "set", url, "--account", "a", "--token", token, "--vault", vault], in: folder)
            XCTAssertEqual(local.status, 0, "\(url): \(local.stderr)")
        }
        let allowed = try await CLI.run(["remote", "set", "http://192.0.2.7:8080", "--account", "a", "--token", token,
                                         "--insecure-http", "--vault", vault], in: folder)
        XCTAssertEqual(allowed.status, 0, allowed.stderr)
    }

    /// `receipt server run --tls-cert --tls-key` as its own process: SIGHUP serves a new certificate
    /// to new connections, the process goes on, SIGTERM stops it cleanly.
    func testSIGHUPReplacesTheCertificateWithoutStoppingTheServer() async throws {
        let folder = TemporaryFolder("receipt-tls")
        let data = folder.file("server")
        let token = try await TestServer.addAccount("alice", data: data)
        let first = try await CLI.run(["server", "cert", "--data", data, "--host", "127.0.0.1", "--json"], in: folder)
        XCTAssertEqual(first.status, 0, first.stderr)
        let cert = try XCTUnwrap(first.json as? [String: String])
        XCTAssertEqual(cert["cert"], data + "/tls/cert.pem")
        let pinA = try XCTUnwrap(cert["sha256"])
        for file in [data + "/tls/cert.pem", data + "/tls/key.pem"] {
            var info = stat()
            XCTAssertEqual(stat(file, &info), 0)
            XCTAssertEqual(info.st_mode & 0o777, 0o600, file)
        }

        let output = folder.file("server-run")
        let server = try CLI.start(["server", "run", "--data", data, "--listen", "127.0.0.1:0", "--json",
                                    "--tls-cert", data + "/tls/cert.pem", "--tls-key", data + "/tls/key.pem"], output: output)
        defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }
        let url = try await Self.listeningURL(output, server)
        XCTAssertTrue(url.hasPrefix("https://127.0.0.1:"), url)

        let vault = folder.file("vault")
        checkEqual(try await CLI.run(["init", "--vault", vault], in: folder).status, 0)
        let set = try await CLI.run(["remote", "set", url, "--account", "alice", "--token", token, "--pin", pinA, "--vault", vault], in: folder)
        XCTAssertEqual(set.status, 0, set.stderr)
        checkEqual(try await CLI.run(["sync", "--vault", vault], in: folder).status, 0)

        let second = try await CLI.run(["server", "cert", "--data", data, "--host", "127.0.0.1", "--json"], in: folder)
        let pinB = try XCTUnwrap((second.json as? [String: String])?["sha256"])
        XCTAssertNotEqual(pinA, pinB)
        XCTAssertEqual(kill(server.processIdentifier, SIGHUP), 0)
        // New connections get the new certificate once the server has read it.
        let deadline = Date().addingTimeInterval(30)
        var repinned = false
        while !repinned && Date() < deadline && server.isRunning {
            repinned = try await CLI.run(["remote", "set", url, "--account", "alice", "--token", token, "--pin", pinB,
                                          "--vault", vault], in: folder).status == 0
            if !repinned { try await Task.sleep(nanoseconds: 50_000_000) }
        }
        XCTAssertTrue(repinned, "the server did not present the new certificate after SIGHUP")
        XCTAssertTrue(server.isRunning, "SIGHUP must not stop the server")
        checkEqual(try await CLI.run(["sync", "--vault", vault], in: folder).status, 0)

        kill(server.processIdentifier, SIGTERM)
        let ended = await CLI.wait(server, output: output)
        XCTAssertEqual(ended.status, 0, ended.stderr)
        XCTAssertFalse(ended.signaled)
    }

    /// `systemctl reload receipt-server` sends SIGHUP whatever the settings: a plain-HTTP server
    /// logs it and goes on serving (SIGHUP's default action would have ended it).
    func testSIGHUPKeepsAPlainHTTPServerServing() async throws {
        let folder = TemporaryFolder("receipt-hup")
        let data = folder.file("server")
        let token = try await TestServer.addAccount("alice", data: data)
        let output = folder.file("server-run")
        let server = try CLI.start(["server", "run", "--data", data, "--listen", "127.0.0.1:0", "--json"], output: output)
        defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }
        let url = try await Self.listeningURL(output, server)
        let vault = folder.file("vault")
        checkEqual(try await CLI.run(["init", "--vault", vault], in: folder).status, 0)
        let set = try await CLI.run(["remote", "set", url, "--account", "alice", "--token", token, "--vault", vault], in: folder)
        XCTAssertEqual(set.status, 0, set.stderr)
        XCTAssertEqual(kill(server.processIdentifier, SIGHUP), 0)
        let synced = try await CLI.run(["sync", "--vault", vault], in: folder)
        XCTAssertEqual(synced.status, 0, synced.stderr)
        XCTAssertTrue(server.isRunning, "SIGHUP must not stop a server without TLS")
        kill(server.processIdentifier, SIGTERM)
        let ended = await CLI.wait(server, output: output)
        XCTAssertEqual(ended.status, 0, ended.stderr)
        XCTAssertFalse(ended.signaled, ended.stderr)
    }

    /// `server cert` makes a certificate that can only be a TLS server's: it signs for no other site.
    func testServerCertMakesALeafForServerAuthenticationOnly() async throws {
        let folder = TemporaryFolder("receipt-tls")
        let made = try await CLI.run(["server", "cert", "--data", folder.file("server"), "--host", "127.0.0.1", "--json"], in: folder)
        XCTAssertEqual(made.status, 0, made.stderr)
        let text = try ReceiptBinary.run(["x509", "-in", folder.file("server/tls/cert.pem"), "-noout", "-text"],
                                         executable: "/usr/bin/openssl").stdout
        XCTAssertTrue(text.contains("CA:FALSE"), text)
        XCTAssertFalse(text.contains("CA:TRUE") || text.contains("Certificate Sign"), text)
        let usages = text.components(separatedBy: "X509v3 Extended Key Usage:").last?.split(separator: "\n").dropFirst().first
        XCTAssertEqual(usages?.trimmingCharacters(in: .whitespaces), "TLS Web Server Authentication", text)
    }

    /// TLS 1.2 with CBC suites is refused to a real client; AEAD suites and TLS 1.3 are served.
    func testTLS12OffersAEADSuitesOnly() async throws {
        let made = try MadeCertificate.make(hosts: ["127.0.0.1"])
        let h = try await Household.start([]) { folder in (try Self.serve(made, in: folder), []) }
        defer { Task { await h.shutdown() } }
        func handshake(_ options: [String]) throws -> (ok: Bool, output: String) {
            let run = try ReceiptBinary.run(["s_client", "-connect", "127.0.0.1:\(h.server.port)"] + options,
                                            executable: "/usr/bin/openssl")
            return (run.status == 0 && run.stdout.contains("BEGIN CERTIFICATE"), run.stdout + run.stderr)
        }
        for cbc in ["ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA", "ECDHE-ECDSA-AES128-SHA256", "AES128-SHA"] {
            let refused = try handshake(["-tls1_2", "-cipher", cbc])
            XCTAssertFalse(refused.ok, "the server agreed to \(cbc): \(refused.output)")
        }
        for aead in ["ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305"] {
            let served = try handshake(["-tls1_2", "-cipher", aead])
            XCTAssertTrue(served.ok && served.output.contains(aead), "\(aead) was refused: \(served.output)")
        }
        XCTAssertTrue(try handshake(["-tls1_3"]).ok, "TLS 1.3 was refused")
    }

    /// The URL `server run --json` prints once it listens.
    static func listeningURL(_ output: String, _ process: Process) async throws -> String {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if let text = try? String(contentsOfFile: output + ".out", encoding: .utf8), let line = text.split(separator: "\n").first,
               let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String], let url = object["url"] {
                return url
            }
            guard process.isRunning else {
                throw HarnessError("the server stopped: \((try? String(contentsOfFile: output + ".err", encoding: .utf8)) ?? "")")
            }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        throw HarnessError("the server did not listen within 60 s")
    }
}
