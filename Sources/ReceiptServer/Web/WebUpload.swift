import BlobStore
import Foundation
import Hummingbird
import MediaTypes
import MultipartKit
import NIOCore
import ReceiptWire
import WebForms

/// Adding and editing receipts from the browser. Both end in `ServerStore.push`, the sync API's
/// own write path: the role check, validation, a new change tag and sequence number, so every
/// member's vault receives the change at its next `receipt sync`.
extension WebRoutes {
    /// `POST /z/OWNER/ZONE/upload` (multipart/form-data, the CSRF field first): each file part is
    /// streamed into a staging file while it is hashed (MultipartKit's streaming parser), then the
    /// blobs are recorded and installed exactly as `PUT /v1/blobs` does, then pushed as records.
    func upload(_ request: Request, context: ServerContext) async throws -> Response {
        try request.refuseBodyOver(limits.maxWebUpload)
        let session = try await session(request)
        return try await guarded(session) {
            guard let session, sameOrigin(request) else { throw Self.crossSite }
            let owner = try context.name("owner"), name = try context.name("zone")
            let zone = try await catalog.webZone(owner: owner, name: name, caller: session.account)
            guard zone.role != .read else {
                throw ServerError(.forbidden, "the account \(session.account.name) may read \(owner)/\(name) but not add receipts to it")
            }
            guard let boundary = WebHeaders.boundary(request.headers[.contentType]) else {
                throw ServerError.bad("the upload must be sent as multipart/form-data")
            }
            let receiver = WebUploadReceiver(store: catalog.blobs, session: session, limits: limits)
            defer { receiver.discardAll() }
            let parser = MultipartParser(boundary: boundary)
            parser.onHeader = { receiver.header($0, $1) }
            parser.onBody = { receiver.body(&$0) }
            parser.onPartComplete = { receiver.partComplete() }
            var total: Int64 = 0
            for try await buffer in request.body {
                total += Int64(buffer.readableBytes)
                guard total <= limits.maxWebUpload else {
                    throw ServerError(.tooLarge, "the upload is larger than the server's limit of \(limits.maxWebUpload) bytes")
                }
                do {
                    try parser.execute(buffer)
                } catch {
                    throw ServerError.bad("the upload is not valid multipart/form-data")
                }
                if let error = receiver.error { throw error }
            }
            guard receiver.csrfChecked else { throw Self.crossSite }
            guard !receiver.files.isEmpty else { throw ServerError.bad("choose at least one photo or PDF to upload") }
            let metadata = try ServerError.checking { try WebMetadata(receiver.fields) }
            let now = ServerRules.now()
            var groups: [[WireAttachment]] = []
            let attachments = receiver.files.map {
                WireAttachment(sha256: $0.staged.id.hex, size: $0.staged.size, filename: $0.filename, mediaType: $0.mediaType)
            }
            if receiver.fields["group"] == "one" {
                var seen = Set<String>()
                groups = [attachments.filter { seen.insert($0.sha256).inserted }]
            } else {
                groups = attachments.map { [$0] }
            }
            let records = groups.map { files in
                WirePushRecord(id: ReceiptID.generate().text, baseTag: nil,
                               receipt: metadata.receipt(attachments: files, tags: [], createdAt: now, modifiedAt: now))
            }
            if let problem = records.compactMap({ $0.receipt?.validationError() }).first { throw ServerError.bad(problem) }
            // The same photo sent again: say where it already is rather than make a copy.
            let attached = try await catalog.webReceiptsAttaching(attachments.map(\.sha256), owner: owner, name: name,
                                                                  caller: session.account)
            if let file = attachments.first(where: { attached[$0.sha256] != nil }), let existing = attached[file.sha256] {
                return alreadyThere(file.filename, receipt: "\(Self.zonePath(owner, name))/r/\(existing)", session: session)
            }
            // The sync upload's write order: possession recorded (and the quota checked), then the
            // files installed durably, then the records that reference them.
            let staged = receiver.files.map(\.staged)
            try await catalog.installUploads(staged, caller: session.account)
            receiver.installed()
            let result = try await catalog.push(WirePushRequest(records: records), owner: owner, name: name,
                                                caller: session.account)
            if let refused = result.results.first(where: { $0.status != .saved }) {
                throw ServerError.bad(refused.error ?? "the receipt \(refused.id) was refused")
            }
            if records.count == 1, let id = records.first?.id { return redirect("\(Self.zonePath(owner, name))/r/\(id)") }
            return redirect(Self.zonePath(owner, name))
        }
    }

    /// `POST /z/OWNER/ZONE/r/ID`: new metadata for a receipt, based on the change tag the form was
    /// rendered with (a receipt changed meanwhile is a conflict, not overwritten).
    func edit(owner: String, zone name: String, id: String, fields: [String: String], session: WebSession) async throws -> Response {
        let (zone, row) = try await catalog.webReceipt(owner: owner, name: name, id: id, caller: session.account)
        guard zone.role != .read else {
            throw ServerError(.forbidden, "the account \(session.account.name) may read \(owner)/\(name) but not edit its receipts")
        }
        let metadata = try ServerError.checking { try WebMetadata(fields) }
        let claims = try WebClaimFields(fields)
        // Only the form's fields change: the attachments stay as they are.
        var receipt = row.receipt
        claims.setAll(on: &receipt)
        receipt.merchant = metadata.merchant
        receipt.date = metadata.date
        receipt.total = metadata.total
        receipt.currency = metadata.currency
        receipt.category = metadata.category
        receipt.note = metadata.note
        // What the person changed is no longer a value read from the text (revision 6).
        receipt.settleReadings(after: row.receipt)
        return try await save(receipt, of: row, baseTag: fields["changeTag"], owner: owner, zone: name, session: session,
                              then: "\(Self.zonePath(owner, name))/r/\(row.id)", conflict: "open it again and redo the edit")
    }

    /// A form's change of one receipt, as one push based on the page's change tag: 303 to `then`
    /// when saved; 409 saying `conflict` (what to do) when someone changed the receipt since.
    func save(_ receipt: WireReceipt, of row: WebReceiptRow, baseTag: String?, owner: String, zone name: String,
              session: WebSession, then location: String, conflict: String) async throws -> Response {
        var receipt = receipt
        receipt.modifiedAt = Self.modifiedNow(after: row.receipt.modifiedAt)
        let result = try await catalog.push(WirePushRequest(records: [WirePushRecord(id: row.id, baseTag: baseTag, receipt: receipt)]),
                                            owner: owner, name: name, caller: session.account)
        switch result.results.first?.status {
        case .saved?:
            return redirect(location)
        case .conflict?:
            throw ServerError(.conflict, "the receipt was changed by someone else since this page was shown: " + conflict)
        default:
            throw ServerError.bad(result.results.first?.error ?? "the change was refused")
        }
    }
}

/// The state of one multipart upload as MultipartKit's parser reports it: text fields collected
/// (8 KiB each at most), file parts streamed into staging files. A file part before the CSRF field
/// has been checked is refused, so nothing is written for a forged request.
final class WebUploadReceiver {
    struct File {
        let staged: StagedBlob
        let filename: String
        let mediaType: String
    }

    let store: BlobStore
    let session: WebSession
    let limits: ServerLimits
    private(set) var fields: [String: String] = [:]
    private(set) var files: [File] = []
    private(set) var error: ServerError?
    private(set) var csrfChecked = false
    static let maxFiles = 50

    private var name: String?
    private var filename: String?
    private var contentType: String?
    private var text: [UInt8] = []
    private var incoming: IncomingBlob?
    private var head = HeadBytes()

    init(store: BlobStore, session: WebSession, limits: ServerLimits) {
        self.store = store
        self.session = session
        self.limits = limits
    }

    func header(_ field: String, _ value: String) {
        switch field.lowercased() {
        case "content-disposition":
            name = WebHeaders.parameter("name", in: value)
            filename = WebHeaders.parameter("filename", in: value)
            if let filename, error == nil { error = WebHeaders.refusal(ofFileName: filename).map { ServerError.bad($0.message) } }
        case "content-type":
            contentType = value.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        default:
            break
        }
    }

    func body(_ buffer: inout ByteBuffer) {
        guard error == nil else { return }
        do {
            if filename != nil {
                guard csrfChecked else { throw WebRoutes.crossSite }
                if incoming == nil {
                    guard files.count < Self.maxFiles else { throw ServerError(.tooLarge, "at most \(Self.maxFiles) files per upload") }
                    incoming = try store.incoming()
                }
                guard let incoming else { return }
                guard incoming.size + Int64(buffer.readableBytes) <= limits.maxBlobSize else {
                    throw ServerError(.tooLarge, "the file \(filename ?? "") is larger than the server's limit of \(limits.maxBlobSize) bytes")
                }
                try buffer.withUnsafeReadableBytes {
                    head.take($0)
                    try incoming.append($0)
                }
            } else {
                guard text.count + buffer.readableBytes <= 8 << 10 else { throw ServerError(.tooLarge, "a form field is longer than 8 KiB") }
                text += buffer.readableBytesView
            }
        } catch let failure as ServerError {
            error = failure
        } catch {
            self.error = ServerError(.failed, "the upload could not be staged: \(error)")
        }
    }

    func partComplete() {
        defer {
            name = nil
            filename = nil
            contentType = nil
            text = []
            incoming = nil
            head = HeadBytes()
        }
        guard error == nil else { return }
        if let filename {
            // A file input left empty still sends a part, with an empty name and no bytes.
            guard let incoming else {
                if !filename.isEmpty { error = ServerError.bad("the file \(filename) is empty") }
                return
            }
            do {
                let type = mediaType(for: filename)
                try DeclaredTypes.check(head.bytes, declared: type, what: "the file \(WebHeaders.safeName(filename))")
                let staged = try incoming.finishAddressedByContent()
                files.append(File(staged: staged, filename: WebHeaders.safeName(filename), mediaType: type))
            } catch let refusal as ServerError {
                incoming.discard()
                error = refusal
            } catch {
                self.error = ServerError(.failed, "the upload could not be staged: \(error)")
            }
        } else if let name {
            let value = String(decoding: text, as: UTF8.self)
            fields[name] = value
            if name == "csrf" { csrfChecked = session.accepts(csrf: value) }
        }
    }

    /// Staging files of blobs not installed are removed (an error, a refusal, a cut-off body).
    func discardAll() {
        incoming?.discard()
        for file in files { store.discard(file.staged) }
        files = []
    }

    /// The staged files now belong to the store.
    func installed() { files = [] }

    func mediaType(for filename: String) -> String {
        let known = WebFiles.inlineTypes.union(["image/heic", "image/heif", "image/tiff", "image/bmp"])
        if let contentType, known.contains(contentType) { return contentType }
        // Named by its extension (the one table of them) when it is one of the types an upload is
        // shown as; otherwise bytes of no known type.
        let named: Set = ["image/jpeg", "image/png", "application/pdf", "image/heic", "image/webp"]
        if let type = MediaType.byFileName(filename), named.contains(type) { return type }
        return "application/octet-stream"
    }
}
