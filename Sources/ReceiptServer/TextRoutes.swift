import HTTPTypes
import Hummingbird
import ReceiptText
import ReceiptWire

/// `/v1/text…`: the text members extracted from blobs, so a household extracts (and OCRs) each blob
/// once. Authorized as the blob's bytes: only a caller that can read a zone referencing the blob
/// may store or read its text; for anything else the answer is 404 or, in lists, silence. Only
/// the extractor versions this server knows are kept: a text under any other name would be storage
/// no vault ever reads.
struct TextRoutes {
    let catalog: any ServerStore
    let limits: ServerLimits

    static let knownVersions = Set(TextExtractor.versions)

    /// The JSON body of the largest text: every byte of it could be escaped.
    var maxBody: Int { limits.maxSmallJSON + 6 * WireText.maxBytes }

    func register(_ group: RouterGroup<ServerContext>) {
        group.put("text/:sha256/:version") { request, context in
            let caller = try context.caller()
            let id = try context.blobID("sha256")
            let version = try context.name("version")
            try checkKnown(version)
            let body = try await request.decodeJSON(WireText.self, limit: maxBody)
            if let problem = body.validationError { throw ServerError.bad(problem) }
            try checkLength(body)
            try await catalog.putText(id.hex, version: version, body, caller: caller)
            return Response(status: .noContent)
        }
        group.post("text/put") { request, context in
            let caller = try context.caller()
            let body = try await request.decodeJSON(WireTextPut.self, limit: limits.maxPushBody)
            guard body.texts.count <= WireTextPut.maxTexts else {
                throw ServerError(.tooLarge, "at most \(WireTextPut.maxTexts) texts per upload, not \(body.texts.count)")
            }
            try checkVersion(body.version)
            try checkKnown(body.version)
            var bytes = 0
            for text in body.texts {
                guard let sha256 = text.sha256, WireName.isValidBlobAddress(sha256) else {
                    throw ServerError.bad("\(text.sha256 ?? "a text without \"sha256\"") is not a blob address (64 lowercase hex digits)")
                }
                if let problem = text.validationError { throw ServerError.bad("the text of \(sha256): \(problem)") }
                try checkLength(text)
                bytes += WireTextPut.weight(text)
            }
            guard body.texts.count == 1 || bytes <= WireTextPut.maxBatchBytes else {
                throw ServerError(.tooLarge, "the texts of one upload are longer than the server's limit of \(WireTextPut.maxBatchBytes) bytes "
                    + "together (a text alone may have \(WireText.maxBytes))")
            }
            return try jsonResponse(WireTextPutResponse(refused: try await catalog.putTexts(body.texts, version: body.version, caller: caller)))
        }
        group.post("text/want") { request, context in
            let caller = try context.caller()
            let body = try await checked(request)
            // A version this server does not keep (a newer vault's): it wants none of them.
            guard Self.knownVersions.contains(body.version) else { return try jsonResponse(WireWantResponse(want: [])) }
            return try jsonResponse(WireWantResponse(want: try await catalog.textWant(body.blobs, version: body.version, caller: caller)))
        }
        group.post("text/fetch") { request, context in
            let caller = try context.caller()
            let body = try await checked(request)
            guard Self.knownVersions.contains(body.version) else { return try jsonResponse(WireTextFetchResponse(texts: [], more: false)) }
            return try jsonResponse(try await catalog.texts(body.blobs, version: body.version, caller: caller, byteLimit: 16 << 20))
        }
    }

    func checked(_ request: Request) async throws -> WireTextRequest {
        let body = try await request.decodeJSON(WireTextRequest.self, limit: limits.maxSmallJSON)
        guard body.blobs.count <= WireTextRequest.maxBlobs else {
            throw ServerError(.tooLarge, "at most \(WireTextRequest.maxBlobs) addresses per request, not \(body.blobs.count)")
        }
        try checkVersion(body.version)
        for blob in body.blobs where !WireName.isValidBlobAddress(blob) {
            throw ServerError.bad("\(blob) is not a blob address (64 lowercase hex digits)")
        }
        return body
    }

    func checkLength(_ text: WireText) throws {
        guard (text.text?.utf8.count ?? 0) <= WireText.maxBytes else {
            throw ServerError(.tooLarge, "the text is longer than the server's limit of \(WireText.maxBytes) bytes")
        }
    }

    func checkKnown(_ version: String) throws {
        guard Self.knownVersions.contains(version) else {
            throw ServerError.bad("this server keeps texts of extractor version \(Self.knownVersions.sorted().joined(separator: ", ")) "
                + "only, not \"\(version)\": nothing was kept")
        }
    }

    func checkVersion(_ version: String) throws {
        guard WireName.isValid(version) else {
            throw ServerError.bad("invalid extractor version \"\(version)\": use 1 to 64 letters, digits, '.', '_' or '-'")
        }
    }
}

/// The revision exchange: every `/v1` answer says the server's revision (`Receipt-Revision`), and a
/// client older than the server serves is told to upgrade (426) before anything else happens. A
/// client that sends no revision is of revision 2, the last before the exchange.
struct RevisionMiddleware: RouterMiddleware {
    static let header = HTTPField.Name(WireProtocol.revisionHeader)!

    func handle(_ request: Request, context: ServerContext,
                next: (Request, ServerContext) async throws -> Response) async throws -> Response {
        let sent = request.headers[Self.header]
        let revision = sent.flatMap { Int($0) } ?? (sent == nil ? 2 : 0)
        guard revision >= WireProtocol.minimumClientRevision else {
            throw ServerError(.upgradeRequired, "this server speaks receipt sync protocol revision \(WireProtocol.revision) and serves clients "
                + "of revision \(WireProtocol.minimumClientRevision) or later; this client is of revision \(sent ?? "?"): "
                + "upgrade receipt on this machine")
        }
        var response = try await next(request, context)
        response.headers[Self.header] = String(WireProtocol.revision)
        return response
    }
}
