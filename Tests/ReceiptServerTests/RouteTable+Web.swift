import Foundation

extension RouteTable {
    /// A 1×1 PNG: an upload whose bytes are what its name and type say.
    static let png = [UInt8](Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")!)
    static let boundary = "probe-boundary-7q"

    /// The caller's form fields with its CSRF token first (none when the probe leaves it out).
    static func form(_ p: Probe, _ fixture: RouteFixture, _ fields: [(String, String)]) -> ProbeBody {
        let csrf = p.csrf(fixture)
        return .form((csrf.isEmpty ? [] : [("csrf", csrf)]) + fields)
    }

    static func upload(_ p: Probe, _ fixture: RouteFixture) -> ProbeBody {
        let csrf = p.csrf(fixture)
        var body: [UInt8] = []
        if !csrf.isEmpty {
            body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n\(csrf)\r\n".utf8)
        }
        body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"merchant\"\r\n\r\nprobe\r\n".utf8)
        body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"files\"; filename=\"probe.png\"\r\nContent-Type: image/png\r\n\r\n".utf8)
        body += png + Array("\r\n--\(boundary)--\r\n".utf8)
        return ProbeBody(contentType: "multipart/form-data; boundary=\(boundary)", bytes: body)
    }

    /// The sign-in form: alice with her password; bob and carol with a wrong one; nobody with nothing.
    static func signIn(_ p: Probe) -> ProbeBody {
        let name: String
        switch p.caller {
        case .member(let n), .otherSurface(let n): name = n
        case .signedOut: name = ""
        }
        let password = name == "alice" ? RouteFixture.password : name.isEmpty ? "" : "wrong"
        return .form([("account", p.variant.params["name"] ?? name), ("password", password)])
    }

    static func forms(_ label: String) -> [Variant] {
        [Variant(label: "\(label) without its CSRF token", body: .withoutCSRF, instead: [403]),
         Variant(label: "\(label) from another site", body: .crossSite, instead: [403])]
    }

    /// Readable receipt (and blob): the zone readable and neither the id nor the address a guess.
    static func readsReceipt(_ p: Probe) -> Bool { p.canRead && !p.absent("id") && !p.absent("sha256") }

    static let web: [String: RouteRule] = [
        "GET /": RouteRule(surface: .open, scope: .none, mutates: false, expect: { _ in [200] }),
        "GET /web/style.css": RouteRule(surface: .open, scope: .none, mutates: false, expect: { _ in [200] }),
        "POST /signin": RouteRule(
            surface: .open, scope: .none, mutates: false,
            variants: [Variant(label: "account ..", params: ["name": ".."], instead: [400]),
                       Variant(label: "account of 65 letters", params: ["name": String(repeating: "n", count: 65)], instead: [400]),
                       Variant(label: "account with a NUL", params: ["name": "ali\u{0}ce"], instead: [400]),
                       Variant(label: "a form of 70 KB", body: .raw(Array(("account=alice&password=" + String(repeating: "x", count: 70_000)).utf8),
                                                                   contentType: "application/x-www-form-urlencoded"), instead: [400, 413]),
                       Variant(label: "sign-in from another site", body: .crossSite, instead: [403])],
            body: { p, _ in signIn(p) },
            expect: { p in
                switch p.caller {
                case .member("alice"), .otherSurface("alice"): return [303]
                case .signedOut: return [400]
                default: return [401]
                }
            }),
        "POST /signout": RouteRule(surface: .web, scope: .none, mutates: true, variants: forms("sign-out"),
                                   body: { p, f in form(p, f, []) }, expect: { _ in [303] }),
        "GET /z/{owner}/{zone}": RouteRule(
            surface: .web, scope: .zone, mutates: false,
            variants: ["page=-9223372036854775808", "page=0", "page=-1", "page=abc", "page=99999999999999999999", "page=1.5",
                       "to=9999-99-99", "q=%00%FF", "q=" + String(repeating: "w%20", count: 1000), "merchant=%25%5F",
                       "category=%27%20OR%201%3D1", "page=9223372036854775807", "page=4611686018427387904"].map {
                Variant(label: "query", query: $0, instead: [200, 400])
            } + ["status=bogus", "from=2026-1-1", "to=x", "from=2025-02-30"].map { Variant(label: "query", query: $0, instead: [400]) },
            expect: { readerOr404($0, 200) }, shows: { $0.target.merchant }),
        "GET /z/{owner}/{zone}/download": RouteRule(
            surface: .web, scope: .zone, mutates: false,
            variants: [Variant(label: "claim package", query: "as=claim"),
                       Variant(label: "filtered", query: "as=claim&status=none&sort=date", instead: [200]),
                       Variant(label: "query", query: "as=zip&q=%00%FF", instead: [200, 400])]
                + ["as=bogus", "as=", "as=claim&status=bogus", "as=zip&from=2025-02-30", "as=claim&as=zip"].map {
                    Variant(label: "query", query: $0, instead: [400])
                },
            expect: { readerOr404($0, 200) }),
        "GET /z/{owner}/{zone}/review": RouteRule(
            surface: .web, scope: .zone, mutates: false,
            variants: [Variant(label: "after a receipt", query: "after=abcdef00-0000-4000-8000-000000000888", instead: [200]),
                       Variant(label: "from a receipt", query: "from=00000000-0000-4000-8000-000000000000", instead: [200])]
                + ["from=x", "after=..", "from=%00", "page=2", "from=abcdef00-0000-4000-8000-000000000888&after=abcdef00-0000-4000-8000-000000000888",
                   "after=" + String(repeating: "9", count: 3000)].map { Variant(label: "query", query: $0, instead: [400]) },
            expect: { readerOr404($0, 200) }),
        "GET /z/{owner}/{zone}/r/{id}": RouteRule(
            surface: .web, scope: .zone, mutates: false,
            variants: [Variant(label: "its place in the list", query: "at=0", instead: [200]),
                       Variant(label: "its place in a filtered list", query: "at=7&status=none&sort=date", instead: [200])]
                + ["at=-1", "at=x", "at=50000000", "at=99999999999999999999", "at=1&status=bogus"].map {
                    Variant(label: "query", query: $0, instead: [400])
                },
            expect: { readsReceipt($0) ? [200] : [404] }, shows: { $0.target.merchant }),
        "GET /z/{owner}/{zone}/r/{id}/f/{sha256}": RouteRule(
            surface: .web, scope: .zone, mutates: false, variants: [Variant(label: "download", query: "download=1")],
            expect: { readsReceipt($0) ? [200] : [404] }, shows: { $0.target.blobMarker }),
        "GET /z/{owner}/{zone}/r/{id}/t/{sha256}": RouteRule(
            surface: .web, scope: .zone, mutates: false,
            variants: [Variant(label: "a page of a file that is no PDF", query: "page=1", instead: [400])]
                + ["page=0", "page=-1", "page=x", "page=99999999999999999999"].map { Variant(label: "query", query: $0, instead: [400]) },
            expect: { readsReceipt($0) ? [200] : [404] }),
        "POST /z/{owner}/{zone}/r/{id}": RouteRule(
            surface: .web, scope: .zone, mutates: true,
            variants: forms("the edit")
                + [Variant(label: "a stale change tag", params: ["changeTag": "stale"], instead: [409]),
                   Variant(label: "a total of 1e999999", params: ["total": "1e999999"], instead: [400]),
                   Variant(label: "a total of 99999999999999999999999", params: ["total": "99999999999999999999999"], instead: [303, 400]),
                   Variant(label: "a date 2026-99-99", params: ["date": "2026-99-99"], instead: [400])],
            body: { p, f in
                form(p, f, [("changeTag", p.variant.params["changeTag"] ?? p.target.changeTag ?? ""), ("merchant", "probe"),
                            ("date", p.variant.params["date"] ?? "2026-01-02"), ("total", p.variant.params["total"] ?? "1.00"),
                            ("currency", "EUR")])
            },
            expect: { p in readsReceipt(p) ? (p.canWrite ? [303] : [403]) : [404] }),
        "POST /z/{owner}/{zone}/r/{id}/review": RouteRule(
            surface: .web, scope: .zone, mutates: true,
            variants: forms("the review")
                + [Variant(label: "a stale change tag", params: ["changeTag": "stale"], instead: [409]),
                   Variant(label: "a field colour", params: ["field": "colour"], instead: [400]),
                   Variant(label: "a total of 1e999999", params: ["value": "1e999999"], instead: [400]),
                   Variant(label: "a blank correction", params: ["value": " "], instead: [400]),
                   Variant(label: "accepting what was not read", params: ["action": "accept"], instead: [400])],
            body: { p, f in
                form(p, f, [("changeTag", p.variant.params["changeTag"] ?? p.target.changeTag ?? ""),
                            (p.variant.params["action"] ?? "correct", p.variant.params["field"] ?? "total"),
                            ("value", p.variant.params["value"] ?? "2,50")])
            },
            expect: { p in readsReceipt(p) ? (p.canWrite ? [303] : [403]) : [404] }),
        "POST /z/{owner}/{zone}/bulk": RouteRule(
            surface: .web, scope: .zone, mutates: true,
            variants: forms("the bulk change")
                + [Variant(label: "no receipt selected", params: ["id": ""], instead: [400, 403]),
                   Variant(label: "an id that is no receipt's", params: ["id": "00000000-0000-4000-8000-000000000000"], instead: [403, 404]),
                   Variant(label: "an id that is no UUID", params: ["id": "../../x"], instead: [403, 404]),
                   Variant(label: "a status of bogus", params: ["status": "bogus"], instead: [400, 403]),
                   Variant(label: "a reimbursed-on date 2026-99-99", params: ["reimbursedOn": "2026-99-99"], instead: [400, 403])],
            body: { p, f in
                let id = p.variant.params["id"] ?? p.target.receiptID
                return form(p, f, (id.isEmpty ? [] : [("id", id)]) + [("status", p.variant.params["status"] ?? "submitted"),
                                   ("claim", "HSA-probe"), ("reimbursedOn", p.variant.params["reimbursedOn"] ?? "2026-01-03")])
            },
            expect: { p in readsReceipt(p) ? (p.canWrite ? [303] : [403]) : [404] }),
        "POST /z/{owner}/{zone}/upload": RouteRule(
            surface: .web, scope: .zone, mutates: true,
            variants: forms("the upload")
                + [Variant(label: "a url-encoded upload", body: .raw(Array("merchant=x".utf8), contentType: "application/x-www-form-urlencoded"),
                           instead: [400, 403, 415])],
            body: { p, f in upload(p, f) }, expect: { writers($0, 303) }),
    ]
}
