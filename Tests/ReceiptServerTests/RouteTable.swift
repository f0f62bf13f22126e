import BlobStore
import Foundation
import ReceiptWire

/// Who a route answers, and how (docs/PROTOCOL.md "The authorization rule", "Endpoints", "Web view").
struct RouteRule: Sendable {
    enum Surface: Sendable {
        /// `/v1`: a bearer token, else 401.
        case api
        /// A web page or form: a session, else GET redirects to `/` (303) and POST is refused (403).
        case web
        /// Served to anyone (`rule.expect` sees every caller).
        case open
    }

    enum Scope: Sendable {
        /// No zone or blob in the request: probed once per caller.
        case none
        /// Names a zone (and maybe a receipt and blob of it): probed per caller and zone.
        case zone
        /// Names a blob, in its path or body: probed per caller and the zone whose receipt attaches it.
        case blob
    }

    var surface: Surface
    var scope: Scope
    /// A success changes the world: the next probe gets a fresh copy of it.
    var mutates: Bool
    /// Parameters its body names (path parameters are read off the route itself).
    var bodyParams: [String] = []
    var variants: [Variant] = []
    var body: @Sendable (Probe, RouteFixture) -> ProbeBody? = { _, _ in nil }
    /// The statuses of a request with real parameters (or `absent` ones) by a caller of the surface.
    var expect: @Sendable (Probe) -> Set<Int>
    /// A string a success must hold: proof that the probe reached the data it names.
    var shows: @Sendable (Probe) -> String? = { _ in nil }
}

/// The expectation of every route. A route the router knows and this table does not fails the
/// test, as does an entry for a route the router no longer has.
enum RouteTable {
    static let junk = Array("bytes nobody uploaded".utf8)
    static let pushID = "00000000-0000-4000-8000-000000000777"

    static func readerOr404(_ p: Probe, _ success: Int) -> Set<Int> { p.canRead ? [success] : [404] }
    /// Owner only: 403 for a participant, 404 for everybody else.
    static func ownerOnly(_ p: Probe, _ success: Set<Int>) -> Set<Int> { p.owns ? success : p.canRead ? [403] : [404] }
    /// Owner and write members: 403 for a read member, 404 for everybody else.
    static func writers(_ p: Probe, _ success: Int) -> Set<Int> { p.canWrite ? [success] : p.canRead ? [403] : [404] }

    static func blobs(_ p: Probe) -> [String] { [p.value("sha256") ?? ""] }

    static let rules: [String: RouteRule] = api.merging(web) { a, _ in a }

    static let api: [String: RouteRule] = [
        "GET /v1/account": RouteRule(surface: .api, scope: .none, mutates: false, expect: { _ in [200] },
                                     shows: { p in "\"account\":\"\(p.caller.account ?? "")\"" }),
        "GET /v1/zones": RouteRule(surface: .api, scope: .none, mutates: false, expect: { _ in [200] }),
        "PUT /v1/zones/{owner}/{zone}": RouteRule(surface: .api, scope: .zone, mutates: true,
                                                  expect: { p in p.caller.account == p.value("owner") ? [200, 201] : [403] }),
        "DELETE /v1/zones/{owner}/{zone}": RouteRule(surface: .api, scope: .zone, mutates: true, expect: { ownerOnly($0, [204]) }),
        "GET /v1/zones/{owner}/{zone}/shares": RouteRule(surface: .api, scope: .zone, mutates: false,
                                                         expect: { readerOr404($0, 200) }),
        "PUT /v1/zones/{owner}/{zone}/shares/{account}": RouteRule(
            surface: .api, scope: .zone, mutates: true,
            variants: [Variant(label: "role owner", body: .raw(Array(#"{"role":"owner"}"#.utf8), contentType: "application/json"), instead: [400])],
            body: { _, _ in .json(WireShareRequest(role: .read)) },
            expect: { p in p.owns && p.absent("account") ? [404] : ownerOnly(p, [204]) }),
        "DELETE /v1/zones/{owner}/{zone}/shares/{account}": RouteRule(
            surface: .api, scope: .zone, mutates: true, expect: { p in p.owns && p.absent("account") ? [404] : ownerOnly(p, [204]) }),
        "POST /v1/zones/{owner}/{zone}/push": RouteRule(
            surface: .api, scope: .zone, mutates: true,
            variants: [Variant(label: "500 records and one", body: .raw(Array(try! JSONEncoder().encode(WirePushRequest(records: (0...500).map {
                WirePushRecord(id: String(format: "00000000-0000-4000-8000-%012d", 5000 + $0), baseTag: nil,
                               receipt: WireReceipt(createdAt: 1, modifiedAt: 1))
            }))), contentType: "application/json"), instead: [400, 413]),
                       Variant(label: "createdAt past Int64", body: .raw(Array(#"{"records":[{"id":"\#(pushID)","receipt":{"tags":[],"attachments":[],"createdAt":99999999999999999999,"modifiedAt":1}}]}"#.utf8), contentType: "application/json"), instead: [400])],
            body: { _, _ in .json(WirePushRequest(records: [WirePushRecord(id: pushID, baseTag: nil,
                                                                           receipt: WireReceipt(merchant: "probe", createdAt: 1, modifiedAt: 1))])) },
            expect: { writers($0, 200) }),
        "GET /v1/zones/{owner}/{zone}/changes": RouteRule(
            surface: .api, scope: .zone, mutates: false,
            variants: ["limit=0", "limit=501", "limit=-1", "limit=9223372036854775807", "limit=-9223372036854775808",
                       "limit=99999999999999999999", "limit=abc", "since=garbage", "since=%00", "since=..%2F..",
                       "since=0123456789abcdef.9223372036854775807", "since=0123456789abcdef.-1"].map {
                Variant(label: "query", query: $0, instead: [400, 410])
            },
            expect: { readerOr404($0, 200) }, shows: { $0.target.merchant }),
        "POST /v1/blobs/want": RouteRule(surface: .api, scope: .blob, mutates: false, bodyParams: ["sha256"],
                                         body: { p, _ in .json(WireWantRequest(blobs: blobs(p))) }, expect: { _ in [200] }),
        "PUT /v1/blobs/{sha256}": RouteRule(
            surface: .api, scope: .blob, mutates: true,
            body: { p, _ in ProbeBody(contentType: "application/octet-stream", bytes: p.readsBlob ? p.target.blob : junk) },
            expect: { p in p.readsBlob ? [204] : [422] }),
        "GET /v1/blobs/{sha256}": RouteRule(surface: .api, scope: .blob, mutates: false,
                                            expect: { p in p.readsBlob ? [200] : [404] }, shows: { $0.target.blobMarker }),
        "POST /v1/blobs/bundle": RouteRule(
            surface: .api, scope: .blob, mutates: true,
            variants: [Variant(label: "a blob of 2^63-1 bytes", body: .raw(WireBundle.header(sha256: [UInt8](repeating: 1, count: 32), length: .max),
                                                                          contentType: WireBundle.contentType), instead: [413]),
                       Variant(label: "a bundle cut inside its header", body: .raw([1, 2, 3], contentType: WireBundle.contentType), instead: [400])],
            body: { p, _ in
                let digest = BlobID(hex: p.value("sha256") ?? "")?.digest ?? [UInt8](repeating: 0, count: 32)
                let bytes = p.readsBlob ? p.target.blob : junk
                return ProbeBody(contentType: WireBundle.contentType, bytes: WireBundle.header(sha256: digest, length: Int64(bytes.count)) + bytes)
            },
            expect: { p in p.readsBlob ? [204] : [422] }),
        "POST /v1/blobs/fetch": RouteRule(surface: .api, scope: .blob, mutates: false, bodyParams: ["sha256"],
                                          body: { p, _ in .json(WireWantRequest(blobs: blobs(p))) },
                                          expect: { p in p.readsBlob ? [200] : [404] }, shows: { $0.target.blobMarker }),
        "PUT /v1/text/{sha256}/{version}": RouteRule(
            surface: .api, scope: .blob, mutates: true,
            variants: [Variant(label: "a NUL in the text", body: .raw(Array(#"{"text":"a\u0000b"}"#.utf8), contentType: "application/json"), instead: [400])],
            body: { _, _ in .json(WireText(text: "probe words", failed: nil)) }, expect: { p in p.readsBlob ? [204] : [404] }),
        "POST /v1/text/put": RouteRule(surface: .api, scope: .blob, mutates: true, bodyParams: ["sha256"],
                                       body: { p, _ in .json(WireTextPut(version: RouteFixture.textVersion, texts: [
                                           WireText(sha256: p.value("sha256"), text: "probe words", failed: nil)])) },
                                       expect: { _ in [200] }),
        "POST /v1/text/want": RouteRule(surface: .api, scope: .blob, mutates: false, bodyParams: ["sha256"],
                                        body: { p, _ in .json(WireTextRequest(version: RouteFixture.textVersion, blobs: blobs(p))) },
                                        expect: { _ in [200] }),
        "POST /v1/text/fetch": RouteRule(surface: .api, scope: .blob, mutates: false, bodyParams: ["sha256"],
                                         body: { p, _ in .json(WireTextRequest(version: RouteFixture.textVersion, blobs: blobs(p))) },
                                         expect: { _ in [200] }, shows: { $0.readsBlob ? $0.target.textMarker : nil }),
    ]
}
