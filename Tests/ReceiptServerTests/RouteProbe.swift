import Foundation
import HTTPTypes

/// A change to a route's real request: other path or body parameters, a query, another body.
struct Variant: Sendable {
    var label: String
    /// Parameters replaced (path parameters, or those a body names, such as `sha256`).
    var params: [String: String] = [:]
    /// Parameters that now name nothing that exists (well-formed): the rule's `absent` answers.
    var absent: Set<String> = []
    var query: String?
    var body: BodyChange?
    /// What a caller whose real request would succeed gets instead; a caller refused anyway may get
    /// its refusal or one of these (whichever the server checks first), never a success. nil: as the real request.
    var instead: Set<Int>?

    static let real = Variant(label: "real values")
}

enum BodyChange: Sendable {
    /// These bytes instead of the rule's body.
    case raw([UInt8], contentType: String)
    /// The web form without its `csrf` field.
    case withoutCSRF
    /// An `Origin` header of another site.
    case crossSite
}

struct ProbeBody: Sendable {
    var contentType: String
    var bytes: [UInt8]

    static func json<T: Encodable>(_ value: T) -> ProbeBody {
        ProbeBody(contentType: "application/json", bytes: Array((try? JSONEncoder().encode(value)) ?? Data()))
    }

    /// A url-encoded form; values are percent-encoded by the one Foundation encoder.
    static func form(_ fields: [(String, String)]) -> ProbeBody {
        var components = URLComponents()
        components.queryItems = fields.map { URLQueryItem(name: $0.0, value: $0.1) }
        // URLComponents leaves `+` alone, which a form decoder reads as a space.
        let text = (components.percentEncodedQuery ?? "").replacingOccurrences(of: "+", with: "%2B")
        return ProbeBody(contentType: "application/x-www-form-urlencoded", bytes: Array(text.utf8))
    }
}

/// One request of the generated test: a route, a caller, the zone its parameters come from, a variant.
struct Probe: Sendable, CustomStringConvertible {
    let route: String
    let caller: Caller
    let target: FixtureZone
    let role: Role
    var variant: Variant

    var description: String {
        "\(route) by \(caller) on \(target.label) (\(role.rawValue)), \(variant.label)"
            + (variant.params.isEmpty ? "" : " \(variant.params)") + (variant.query.map { " ?\($0)" } ?? "")
    }

    var method: HTTPRequest.Method { HTTPRequest.Method(String(route.prefix { $0 != " " }))! }
    var pattern: String { String(route.drop { $0 != " " }.dropFirst()) }

    var signedIn: Bool { caller.account != nil }
    var owns: Bool { role == .owner }
    var canRead: Bool { signedIn && [.owner, .write, .read].contains(role) }
    var canWrite: Bool { signedIn && [.owner, .write].contains(role) }
    func absent(_ param: String) -> Bool { variant.absent.contains(param) }
    /// The caller may read the blob the probe names.
    var readsBlob: Bool { canRead && !absent("sha256") }

    /// The value of a parameter: the variant's, else the target zone's.
    func value(_ param: String) -> String? {
        if let given = variant.params[param] { return given }
        switch param {
        case "owner": return target.owner
        case "zone": return target.name
        case "id": return target.receiptID
        case "sha256": return target.blobHex
        case "account": return "bob"
        case "version": return RouteFixture.textVersion
        default: return nil
        }
    }

    /// The path with every `{parameter}` filled; nil names a parameter this test cannot fill.
    func path() -> Result<String, FixtureError> {
        var parts: [String] = []
        for part in pattern.split(separator: "/", omittingEmptySubsequences: true) {
            guard part.hasPrefix("{") else {
                guard !part.contains("{") && !part.contains("*") else { return .failure(FixtureError("\(route): the path element \(part) is not one this test fills")) }
                parts.append(String(part))
                continue
            }
            let name = String(part.dropFirst().dropLast())
            guard part.hasSuffix("}"), let value = value(name) else {
                return .failure(FixtureError("\(route): no value for the path parameter {\(name)}: teach Probe.value(_:) about it"))
            }
            parts.append(value)
        }
        return .success("/" + parts.joined(separator: "/") + (variant.query.map { "?" + $0 } ?? ""))
    }
}

/// The headers and body a probe sends.
struct ProbeRequest {
    var uri: String
    var method: HTTPRequest.Method
    var headers: HTTPFields = [:]
    var body: [UInt8]?

    /// What the request itself carries, as text: an answer may repeat it.
    var carried: String { uri + "\n" + String(decoding: body ?? [], as: UTF8.self) }
}

extension Probe {
    func request(_ rule: RouteRule, _ fixture: RouteFixture) -> Result<ProbeRequest, FixtureError> {
        let path: String
        switch self.path() {
        case .success(let p): path = p
        case .failure(let e): return .failure(e)
        }
        var request = ProbeRequest(uri: path, method: method)
        let api = pattern.hasPrefix("/v1")
        switch caller {
        case .member(let name):
            if api { request.headers[.authorization] = "Bearer \(fixture.tokens[name] ?? "")" }
            else { request.headers[.cookie] = "receipt_session=\(fixture.cookies[name] ?? "")" }
        case .otherSurface(let name):
            if api { request.headers[.cookie] = "receipt_session=\(fixture.cookies[name] ?? "")" }
            else { request.headers[.authorization] = "Bearer \(fixture.tokens[name] ?? "")" }
        case .signedOut:
            break
        }
        var body = rule.body(self, fixture)
        switch variant.body {
        case .raw(let bytes, let type)?: body = ProbeBody(contentType: type, bytes: bytes)
        case .withoutCSRF?: body = rule.body(self.withoutCSRF(), fixture)
        case .crossSite?: request.headers[.origin] = "https://elsewhere.example"
        case nil: break
        }
        if let body {
            request.headers[.contentType] = body.contentType
            request.body = body.bytes
        }
        return .success(request)
    }

    /// The same probe, its form built with an empty CSRF token (rules' bodies read `csrf(fixture)`).
    func withoutCSRF() -> Probe {
        var copy = self
        copy.variant.params["csrf"] = ""
        return copy
    }

    /// The CSRF token a web form of this caller carries: its session's (or alice's, for a caller
    /// without a session: the token alone must not be enough).
    func csrf(_ fixture: RouteFixture) -> String {
        if let given = variant.params["csrf"] { return given }
        switch caller {
        case .member(let name), .otherSurface(let name): return fixture.csrf[name] ?? ""
        case .signedOut: return fixture.csrf["alice"] ?? ""
        }
    }
}
