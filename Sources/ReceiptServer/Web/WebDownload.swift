import BlobStore
import Foundation
import Hummingbird
import NIOCore
import ReceiptExportLayout
import ReceiptWire
import WebForms

/// "Download these": `GET /z/OWNER/ZONE/download?…the list's filters…&as=zip|claim`, the receipts
/// the list's filter matches as a zip of their files, or as a claim package in exactly the layout of
/// `receipt export --for claim --zip` (numbered files, index.csv, summary.txt, SHA256SUMS). Both are
/// written by the layout the vault's `export` uses too (`ExportLayout.writeZip`) into a private file
/// under `DATA/downloads/`, one attachment on disk at a time, then sent from that file in pieces:
/// memory does not grow with the download. Any member who can read the zone may download it.
extension WebRoutes {
    /// Most receipts one download takes: the receipts' metadata (not their files) is held at once.
    static let maxDownload = 100_000

    func download(_ request: Request, context: ServerContext, session: WebSession) async throws -> Response {
        let owner = try context.name("owner"), name = try context.name("zone")
        let queryText = request.uri.query ?? ""
        let query = try WebListQuery(query: queryText)
        let kind = try Self.decodeForm(queryText, what: "the download's query")["as"] ?? "zip"
        guard let purpose = ["zip": ExportPurpose.plain, "claim": .claim][kind] else {
            throw ServerError.bad("cannot download as \(kind.prefix(40)): give as=zip (the default) or as=claim")
        }
        let page = try await catalog.webZonePage(owner: owner, name: name, filter: query.filter, offset: 0,
                                                 limit: Self.maxDownload + 1, caller: session.account)
        guard page.receipts.count <= Self.maxDownload else {
            throw ServerError.bad("the filter matches more than \(Self.maxDownload) receipts: narrow it to download them")
        }
        // The vault's `list` order, which numbers a claim package's files: by date, undated last.
        let receipts = page.receipts.map { ReceiptView(id: $0.id, zone: name, wire: $0.receipt) }.sorted {
            ($0.date == nil ? 1 : 0, $0.date ?? "", $0.id) < ($1.date == nil ? 1 : 0, $1.date ?? "", $1.id)
        }
        // A zone name is letters, digits, `.`, `_` and `-` already (`WireName`).
        let zipName = "\(name)\(purpose == .claim ? "-claim" : "").zip"
        let store = catalog.blobs
        let zip = try await WebDownloadFile.make(receipts, purpose: purpose, store: store, named: zipName)
        let size = zip.size
        let body = ResponseBody(contentLength: Int(size)) { writer in
            var offset: Int64 = 0
            while offset < size {
                var piece = ByteBufferAllocator().buffer(capacity: BlobStore.chunkSize)
                let n = try piece.writeWithUnsafeMutableBytes(minimumWritableBytes: BlobStore.chunkSize) { free in
                    try zip.fd.read(into: UnsafeMutableRawBufferPointer(rebasing: free[..<Int(min(Int64(free.count), size - offset))]),
                                 at: offset)
                }
                guard n > 0 else { throw ServerError(.failed, "the download \(zipName) ended early on the server") }
                offset += Int64(n)
                try await writer.write(piece)
            }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [
            .contentType: "application/zip", .contentDisposition: WebFiles.contentDisposition(zipName, inline: false),
            .xContentTypeOptions: "nosniff", .cacheControl: "private, no-store",
        ], body: body)
    }
}
