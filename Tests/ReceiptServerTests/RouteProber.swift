import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
@testable import ReceiptServer

/// Makes the probes of every route and sends them to a live server over a copy of the fixture.
struct RouteProber: Sendable {
    let fixture: RouteFixture
    /// The routes as the server's router lists them (`METHOD /path/{parameter}`).
    let routes: [String]

    static let callers: [Caller] = [.member("alice"), .member("bob"), .member("carol"), .signedOut, .otherSurface("alice")]
    static let methods: [HTTPRequest.Method] = [.get, .head, .put, .post, .delete, .patch, .options]

    static func isSuccess(_ status: Int) -> Bool { (200..<400).contains(status) }

    /// The router the server runs, over `store` (no request rate limit: the probes come fast).
    static func router(_ store: any ServerStore) -> Router<ServerContext> {
        SyncServer.buildRouter(catalog: store, limits: ServerLimits(rate: nil), web: WebOptions())
    }

    static func routes(of router: Router<ServerContext>) -> [String] {
        router.routes.map { "\($0.method.rawValue) \($0.path.description)" }.sorted()
    }

    // MARK: Probes

    func probe(_ route: String, _ caller: Caller, _ target: FixtureZone, _ variant: Variant = .real) -> Probe {
        let role = caller.account.map { fixture.role(of: $0, in: target) } ?? .outsider
        return Probe(route: route, caller: caller, target: target, role: role, variant: variant)
    }

    /// Every caller on every zone with real values; then each variant by each member on each zone
    /// that exists.
    func probes(_ route: String, _ rule: RouteRule) -> [Probe] {
        let targets = rule.scope == .none ? [fixture.targets[0]] : fixture.targets
        let real = Self.callers.flatMap { caller in targets.map { probe(route, caller, $0) } }
        let params = Self.pathParameters(route) + rule.bodyParams
        let variants = params.flatMap { Self.variants(of: $0, in: fixture.targets[0]) } + rule.variants
        let members = Self.callers.filter { $0.account != nil }
        let varied = variants.flatMap { variant in
            members.flatMap { caller in targets.filter { $0.name != fixture.ghost.name || rule.scope == .none }.map { probe(route, caller, $0, variant) } }
        }
        return real + varied
    }

    static func pathParameters(_ route: String) -> [String] {
        route.split(separator: "/").filter { $0.hasPrefix("{") && $0.hasSuffix("}") }.map { String($0.dropFirst().dropLast()) }
    }

    /// Malformed values of a parameter (400: every path parameter is checked before it is used;
    /// a receipt id the web view does not know is 404 whatever its shape), and a well-formed one that names nothing.
    static func variants(of param: String, in zone: FixtureZone) -> [Variant] {
        let names = ["..", ".hidden", "-dash", "%2E%2E", "a%00b", "%2F", "%C3%A9", "a%20b", String(repeating: "n", count: 65),
                     String(repeating: "n", count: 3000)]
        let malformed: [String]
        var absent: String?
        switch param {
        case "owner", "zone", "version":
            malformed = names
        case "account":
            malformed = names
            absent = "nobody7q"
        case "id":
            malformed = [zone.receiptID.uppercased(), "not-a-uuid", zone.receiptID + "0", "..", "%00", String(repeating: "9", count: 3000),
                         "%27%20OR%201%3D1%20--"]
            absent = "abcdef00-0000-4000-8000-000000000888"
        case "sha256":
            malformed = [zone.blobHex.uppercased(), String(zone.blobHex.dropLast()), zone.blobHex + "0", String(repeating: "g", count: 64),
                         "..", "%00" + String(zone.blobHex.dropFirst(3)), "..%2F..%2Fserver.sqlite"]
            absent = String(repeating: "ab", count: 32)
        default:
            malformed = []
        }
        let refused: Set<Int> = param == "id" ? [400, 404] : [400]
        return malformed.map { Variant(label: "malformed \(param)", params: [param: $0], instead: refused) }
            + (absent.map { [Variant(label: "\(param) naming nothing", params: [param: $0], absent: [param])] } ?? [])
    }

    /// Methods a path does not have, and paths under `/v1` no route has: 401 without a token (the
    /// sync API answers nothing else to a stranger), 404 or 405 with one; the web view's 404 or 405
    /// (a HEAD of a page may be answered as its GET).
    func strayProbes() -> [(Probe, RouteRule)] {
        var registered: [String: Set<String>] = [:]
        for route in routes {
            let parts = route.split(separator: " ", maxSplits: 1)
            registered[String(parts[1]), default: []].insert(String(parts[0]))
        }
        let unknown = ["/v1/nope", "/v1/zones/{owner}/{zone}/changes/extra", "/v1/blobs", "/v1/%00", "/v1/zones/{owner}"]
        var out: [(Probe, RouteRule)] = []
        for path in registered.keys.sorted() + unknown {
            let api = path.hasPrefix("/v1")
            for method in Self.methods where !(registered[path]?.contains(method.rawValue) ?? false) {
                let rule = RouteRule(surface: api ? .api : .open, scope: .none, mutates: false,
                                     expect: { p in api || p.method != .head ? [404, 405] : [200, 303, 404, 405] })
                for caller in [Caller.member("alice"), .signedOut] {
                    out.append((probe("\(method.rawValue) \(path)", caller, fixture.targets[0]), rule))
                }
            }
        }
        return out
    }

    // MARK: Expectations

    static func expected(_ rule: RouteRule, _ p: Probe) -> Set<Int> {
        if !p.signedIn && rule.surface != .open {
            return rule.surface == .api ? [401] : p.method == .get ? [303] : [403]
        }
        let real = rule.expect(p)
        guard let instead = p.variant.instead else { return real }
        if real.allSatisfy(isSuccess) { return instead }
        return real.union(instead.filter { !isSuccess($0) })
    }

    // MARK: Running

    /// What ends a run of probes on one connection.
    enum Stop: Sendable {
        /// Every probe was sent.
        case done
        /// The server closed the connection after its answer (one refused before its body was read).
        case closed
        /// A success changed the world: the next probe needs a fresh copy of the fixture.
        case changed
    }

    /// Sends the probes in order, over a fresh copy of the fixture whenever a probe's success
    /// changed it, and over a new connection (the test client has one) whenever the server closed
    /// it. Returns one line per problem.
    func run(_ probes: [(Probe, RouteRule)]) async throws -> [String] {
        var remaining = probes[...]
        var problems: [String] = []
        var logger = Logger(label: "route-probes")
        logger.logLevel = .critical
        while !remaining.isEmpty {
            let store = try await fixture.copy()
            let router = Self.router(store)
            do {
                var stop = Stop.closed
                while stop == .closed && !remaining.isEmpty {
                    let batch = Array(remaining)
                    let (sent, found, why) = try await Application(router: router, logger: logger).test(.live) { client in
                        try await self.send(batch, client)
                    }
                    problems += found
                    remaining = remaining.dropFirst(sent)
                    stop = why
                }
            } catch {
                try? await store.close()
                throw error
            }
            try await store.close()
        }
        return problems
    }

    /// Sends probes until one changes the world or the connection closes; returns how many were
    /// sent, the problems seen and why it stopped.
    func send(_ batch: [(Probe, RouteRule)], _ client: any TestClientProtocol) async throws -> (Int, [String], Stop) {
        var problems: [String] = []
        for (index, (probe, rule)) in batch.enumerated() {
            let (found, stop) = try await send(probe, rule, client)
            problems += found
            if let stop { return (index + 1, problems, stop) }
        }
        return (batch.count, problems, .done)
    }

    func send(_ probe: Probe, _ rule: RouteRule, _ client: any TestClientProtocol) async throws -> ([String], Stop?) {
        let request: ProbeRequest
        switch probe.request(rule, fixture) {
        case .success(let r): request = r
        case .failure(let e): return ([e.description], nil)
        }
        let response: TestResponse
        do {
            response = try await client.executeRequest(uri: request.uri, method: request.method, headers: request.headers,
                                                       body: request.body.map { ByteBuffer(bytes: $0) })
        } catch {
            throw FixtureError("\(probe): \(error)")
        }
        let status = Int(response.status.code)
        let text = response.headers.map { "\($0.name): \($0.value)" }.joined(separator: "\n") + "\n"
            + String(decoding: response.body.readableBytesView, as: UTF8.self)
        var problems: [String] = []
        let expected = Self.expected(rule, probe)
        if !expected.contains(status) {
            let body = String(decoding: response.body.readableBytesView.prefix(300), as: UTF8.self)
            problems.append("\(probe): answered \(status), expected \(expected.sorted()): \(body)")
        }
        let forbidden = fixture.forbidden(for: probe.caller)
        for secret in forbidden.secrets where text.contains(secret) {
            problems.append("\(probe): the answer (\(status)) holds \(secret), of a zone the caller cannot read")
        }
        // A blob route names its blob, in the path or (a bundle's header) in binary.
        let carried = request.carried + (rule.scope == .blob ? probe.value("sha256") ?? "" : "")
        for name in forbidden.names where text.contains(name) && !carried.contains(name) {
            problems.append("\(probe): the answer (\(status)) names \(name), of a zone the caller cannot read, which it did not ask about")
        }
        if (200..<300).contains(status), probe.variant.label == Variant.real.label, let shown = rule.shows(probe), !text.contains(shown) {
            problems.append("\(probe): the answer (\(status)) does not show \(shown)")
        }
        if rule.mutates && Self.isSuccess(status) { return (problems, .changed) }
        return (problems, response.headers[.connection]?.lowercased() == "close" ? .closed : nil)
    }
}
