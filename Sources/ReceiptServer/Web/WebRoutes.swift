import BlobStore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ReceiptWire
import WebForms

/// How the web view is served.
public struct WebOptions: Sendable {
    /// Marks the session cookie `Secure` (set when the server speaks TLS).
    public var secureCookies: Bool
    public init(secureCookies: Bool = false) { self.secureCookies = secureCookies }
    /// The scheme browsers reach the server by: `https` exactly when it speaks TLS (and sets secure cookies).
    var scheme: String { secureCookies ? "https" : "http" }
}

/// The web view (docs/PROTOCOL.md "Web view"): sign-in with a password and a session cookie, then
/// the zones, receipts and attachments the account may read, under the sync API's own
/// authorization (`ServerRules.require`, AuthorizationRules.swift). Bearer tokens are never accepted here, nor
/// sessions in the sync API.
struct WebRoutes {
    let catalog: any WebStore
    let limits: ServerLimits
    let web: WebOptions
    let throttle = WebThrottle()
    let thumbnails: WebThumbnails
    static let cookieName = "receipt_session"
    static let pageSize = WebListQuery.pageSize

    func register(_ router: Router<ServerContext>) {
        router.get("/") { request, context in
            guard let session = try await session(request) else { return signInPage() }
            return try await guarded(session) { try await zonesPage(session) }
        }
        router.post("signin") { request, context in try await signIn(request, context: context) }
        router.post("signout") { request, context in
            try await form(request, context: context) { session, _ in
                if let id = request.cookies[Self.cookieName]?.value { try await catalog.closeSession(id) }
                var response = redirect("/")
                response.setCookie(cookie(value: "", maxAge: 0))
                _ = session
                return response
            }
        }
        router.get("web/style.css") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/css; charset=utf-8", .cacheControl: "max-age=3600"],
                     body: ResponseBody(byteBuffer: ByteBuffer(string: WebTemplates.stylesheet)))
        }
        router.get("z/:owner/:zone") { request, context in
            try await page(request) { session in try await zonePage(request, context: context, session: session) }
        }
        router.get("z/:owner/:zone/review") { request, context in
            try await page(request) { session in
                try await reviewPage(owner: context.name("owner"), zone: context.name("zone"), query: request.uri.query ?? "", session: session)
            }
        }
        router.post("z/:owner/:zone/r/:id/review") { request, context in
            try await form(request, context: context) { session, fields in
                try await reviewAction(owner: context.name("owner"), zone: context.name("zone"),
                                       id: context.parameters.get("id") ?? "", fields: fields, session: session)
            }
        }
        router.get("z/:owner/:zone/download") { request, context in
            try await page(request) { session in try await download(request, context: context, session: session) }
        }
        router.get("z/:owner/:zone/r/:id") { request, context in
            try await page(request) { session in
                try await receiptPage(owner: context.name("owner"), zone: context.name("zone"),
                                      id: context.parameters.get("id") ?? "", query: WebListQuery(query: request.uri.query ?? ""),
                                      session: session)
            }
        }
        router.get("z/:owner/:zone/r/:id/f/:sha256") { request, context in
            try await page(request) { session in
                try await file(owner: context.name("owner"), zone: context.name("zone"),
                               id: context.parameters.get("id") ?? "", blob: context.blobID("sha256"),
                               download: request.uri.queryParameters.get("download") != nil, session: session)
            }
        }
        router.get("z/:owner/:zone/r/:id/t/:sha256") { request, context in
            try await page(request) { session in
                try await thumbnail(owner: context.name("owner"), zone: context.name("zone"),
                                    id: context.parameters.get("id") ?? "", blob: context.blobID("sha256"),
                                    page: request.uri.queryParameters.get("page"), session: session)
            }
        }
        router.post("z/:owner/:zone/r/:id") { request, context in
            try await form(request, context: context) { session, fields in
                try await edit(owner: context.name("owner"), zone: context.name("zone"),
                               id: context.parameters.get("id") ?? "", fields: fields, session: session)
            }
        }
        router.post("z/:owner/:zone/upload") { request, context in
            try await upload(request, context: context)
        }
        router.post("z/:owner/:zone/bulk") { request, context in
            try await bulk(request, context: context)
        }
    }

    // MARK: Sessions and forms

    func session(_ request: Request) async throws -> WebSession? {
        guard let id = request.cookies[Self.cookieName]?.value, !id.isEmpty else { return nil }
        return try await catalog.session(id)
    }

    func cookie(value: String, maxAge: Int) -> Cookie {
        Cookie(name: Self.cookieName, value: value, maxAge: maxAge, path: "/", secure: web.secureCookies,
               httpOnly: true, sameSite: .strict)
    }

    /// A GET page: without a session, back to the sign-in page.
    func page(_ request: Request, _ body: (WebSession) async throws -> Response) async throws -> Response {
        guard let session = try await session(request) else { return redirect("/") }
        return try await guarded(session, { try await body(session) })
    }

    /// Renders a `ServerError` (404 for what the account cannot read, 403, 400 ...) as a page.
    func guarded(_ session: WebSession?, _ body: () async throws -> Response) async throws -> Response {
        do {
            return try await body()
        } catch let error as ServerError {
            let heading = error.code == 404 ? "Not found" : error.code == 403 ? "Not allowed" : "Refused"
            return html(WebTemplates.render("error", ["heading": heading, "message": error.message,
                                                      "advice": Self.advice(forStatus: error.code)]),
                        title: heading, session: session, status: HTTPResponse.Status(code: error.code))
        }
    }

    /// True unless the request names another site as where it comes from: its `Origin` (browsers
    /// send one with every cross-site POST), else its `Referer`, must have this server's scheme, host
    /// and port. A request with neither is no browser's cross-site form; its CSRF token is still checked.
    func sameOrigin(_ request: Request) -> Bool {
        guard let claimed = request.headers[.origin] ?? request.headers[.referer] else { return true }
        return WebHeaders.isSameOrigin(claimed, authority: request.head.authority, scheme: web.scheme)
    }

    /// A state-changing POST with a url-encoded body: refused (403) unless it comes with a live
    /// session, from this site, carrying the session's CSRF token.
    func form(_ request: Request, context: ServerContext,
              _ body: (WebSession, [String: String]) async throws -> Response) async throws -> Response {
        try await form(request, context: context) { session, fields, ids in
            guard ids.isEmpty else { throw ServerError.bad("this form takes no receipt selection (id)") }
            return try await body(session, fields)
        }
    }

    /// A form whose checkboxes named `id` may be sent many times (the list's selection): those
    /// values come apart from the other fields, each of which may be sent once.
    func form(_ request: Request, context: ServerContext,
              _ body: (WebSession, [String: String], [String]) async throws -> Response) async throws -> Response {
        let session = try await session(request)
        return try await guarded(session) {
            guard let session, sameOrigin(request) else { throw Self.crossSite }
            let (fields, ids) = try await Self.formFields(request)
            guard session.accepts(csrf: fields["csrf"]) else { throw Self.crossSite }
            return try await body(session, fields, ids)
        }
    }

    static let crossSite = ServerError(.forbidden, "this form was refused: it did not come from a page of this server in a signed-in session (sign in again and resend it)")

    static func formFields(_ request: Request) async throws -> (fields: [String: String], ids: [String]) {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: 64 << 10)
        } catch is NIOTooManyBytesError {
            throw ServerError(.tooLarge, "the form is larger than 64 KiB")
        }
        let pairs = String(buffer: buffer).split(separator: "&", omittingEmptySubsequences: true)
        let isID = { (pair: Substring) in pair.hasPrefix("id=") }
        // A receipt id is a UUID: it needs no decoding, and one that is not a UUID is not found (404).
        let ids = pairs.filter(isID).map { String($0.dropFirst(3)) }
        return (try decodeForm(pairs.filter { !isID($0) }.joined(separator: "&"), what: "the form"), ids)
    }

    // MARK: Sign-in

    func signInPage(message: String? = nil, name: String = "", status: HTTPResponse.Status = .ok) -> Response {
        var values: [String: Any] = ["name": name]
        if let message { values["message"] = message }
        return html(WebTemplates.render("signin", values), title: "Sign in", session: nil, status: status)
    }

    func signIn(_ request: Request, context: ServerContext) async throws -> Response {
        guard sameOrigin(request) else {
            return signInPage(message: "The sign-in form was sent from another site.", status: .forbidden)
        }
        let fields: [String: String]
        do {
            fields = try await Self.formFields(request).fields
        } catch let error as ServerError {
            return signInPage(message: error.message, status: .badRequest)
        }
        let name = fields["account"] ?? "", password = fields["password"] ?? ""
        guard WireName.isValid(name), !password.isEmpty else {
            return signInPage(message: "Enter an account name and its password.", name: name, status: .badRequest)
        }
        let address = context.remoteAddress ?? "unknown"
        if let wait = await throttle.admit(account: name, address: address) {
            var response = signInPage(message: "Too many failed sign-ins: try again in \(wait) seconds.", name: name,
                                      status: .tooManyRequests)
            response.headers[.retryAfter] = "\(wait)"
            return response
        }
        let account: Account?
        do {
            account = try await catalog.checkPassword(account: name, password: password)
        } catch {
            await throttle.abandoned(account: name, address: address)
            throw error
        }
        guard let account else {
            await throttle.failed(account: name, address: address)
            return signInPage(message: "The account name or password is wrong.", name: name, status: .unauthorized)
        }
        await throttle.succeeded(account: name, address: address)
        let id = try await catalog.openSession(for: account)
        var response = redirect("/")
        response.setCookie(cookie(value: id, maxAge: Int(ServerRules.sessionLifetimeMilliseconds / 1000)))
        return response
    }

    // MARK: Pages

    func zonesPage(_ session: WebSession) async throws -> Response {
        let zones = try await catalog.zones(for: session.account)
        let rows: [[String: Any]] = zones.map { zone in
            ["href": Self.zonePath(zone.owner, zone.name), "label": Self.label(zone.owner, zone.name, session),
             "owner": zone.owner, "role": zone.role.rawValue]
        }
        return html(WebTemplates.render("zones", ["zones": rows, "hasZones": !rows.isEmpty, "account": session.account.name]),
                    title: "Zones", session: session)
    }

    func file(owner: String, zone name: String, id: String, blob: BlobID, download: Bool,
              session: WebSession) async throws -> Response {
        let (_, row) = try await catalog.webReceipt(owner: owner, name: name, id: id, caller: session.account)
        guard let attachment = row.receipt.attachments.first(where: { $0.sha256 == blob.hex }),
              catalog.blobs.contains(blob) else { throw ServerError.notFound("blob \(blob)") }
        return WebFiles.send(attachment, id: blob, store: catalog.blobs, download: download)
    }

    /// The first page of an image or PDF attachment, small; the placeholder when there is none.
    /// With `?page=N`, page N of a PDF, large (the receipt page's preview): 400 for a page that is
    /// not a whole number from 1, or of a file that is no PDF; 404 past the PDF's last page.
    func thumbnail(owner: String, zone name: String, id: String, blob: BlobID, page pageText: String?,
                   session: WebSession) async throws -> Response {
        let (_, row) = try await catalog.webReceipt(owner: owner, name: name, id: id, caller: session.account)
        guard let attachment = row.receipt.attachments.first(where: { $0.sha256 == blob.hex }) else {
            throw ServerError.notFound("blob \(blob)")
        }
        var page: Int?
        if let pageText {
            guard pageText.utf8.count <= 6, let n = Int(pageText), n >= 1 else {
                throw ServerError.bad("the page \(pageText.prefix(40)) is not a whole number from 1")
            }
            guard attachment.mediaType == "application/pdf" else { throw ServerError.bad("only a PDF has pages: \(attachment.filename) has one") }
            if let count = catalog.blobs.contains(blob) ? await thumbnails.pageCount(blob) : nil, n > count {
                throw ServerError.notFound("page \(n) of \(attachment.filename), which has \(count) page\(count == 1 ? "" : "s")")
            }
            page = n
        }
        let made = catalog.blobs.contains(blob) ? await thumbnails.thumbnail(blob, mediaType: attachment.mediaType, page: page)
            : .placeholder
        if case .png(let path) = made, let bytes = FileManager.default.contents(atPath: path) {
            // Derived from content-addressed bytes: never changes, so the browser may keep it.
            return Response(status: .ok, headers: [.contentType: "image/png", .cacheControl: "private, max-age=86400",
                                                   .xContentTypeOptions: "nosniff", .contentSecurityPolicy: "default-src 'none'"],
                            body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
        }
        return Response(status: .ok, headers: [.contentType: "image/svg+xml", .cacheControl: "no-store",
                                               .xContentTypeOptions: "nosniff", .contentSecurityPolicy: "default-src 'none'"],
                        body: ResponseBody(byteBuffer: ByteBuffer(string: WebThumbnails.placeholderSVG)))
    }

    // MARK: Helpers

    /// What a person can do next after a refusal, in plain words.
    static func advice(forStatus code: Int) -> String {
        switch code {
        case 404: "It may have been removed, or it is not shared with your account: ask its owner to share the zone with you."
        case 403: "Your account may read this zone but not change it: ask its owner for write access."
        case 409: "Open the receipt again to see the other change, then make yours again."
        case 413: "The file is larger than this server accepts: send a smaller scan, or ask the server's administrator."
        case 415: "The file is not what its name or type says: send the original photo or PDF."
        case 429: "Too many tries: wait a minute, then try again."
        case 400..<500: "Go back, correct what the sentence above names, and send the form again."
        default: "Something went wrong on the server: try again in a moment, or tell the server's administrator."
        }
    }

    static func zonePath(_ owner: String, _ name: String) -> String { "/z/\(owner)/\(name)" }

    /// A zone is `NAME` to its owner and `OWNER/NAME` to everybody else.
    static func label(_ owner: String, _ name: String, _ session: WebSession) -> String {
        owner == session.account.name ? name : "\(owner)/\(name)"
    }

    /// A date of the list's filters or a form, by the one rule of every door (`WebForm.date`).
    static func checkDate(_ text: String, _ what: String) throws -> String {
        try ServerError.checking { try WebForm.date(text, what) }
    }

    func redirect(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }

    func html(_ body: String, title: String, session: WebSession?, status: HTTPResponse.Status = .ok) -> Response {
        var values: [String: Any] = ["title": title, "body": body]
        if let session {
            values["account"] = session.account.name
            values["csrf"] = session.csrf
        }
        let page = WebTemplates.render("layout", values)
        return Response(status: status, headers: [
            .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
            .contentSecurityPolicy: "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
            .xContentTypeOptions: "nosniff", HTTPField.Name("Referrer-Policy")!: "same-origin",
        ], body: ResponseBody(byteBuffer: ByteBuffer(string: page)))
    }
}
