import BlobStore
import Hummingbird
import NIOCore
import ReceiptWire

/// `/v1/blobs…`: have/want, upload (verified against the address), download (authorized by zone).
struct BlobRoutes {
    let catalog: ServerCatalog
    let limits: ServerLimits

    func register(_ group: RouterGroup<ServerContext>) {
        group.post("blobs/want") { request, context in
            let body = try await request.decodeJSON(WireWantRequest.self, context: context)
            guard body.blobs.count <= WireProtocol.maxWantBlobs else {
                throw ServerError(413, "at most \(WireProtocol.maxWantBlobs) addresses per request, not \(body.blobs.count)")
            }
            return try jsonResponse(WireWantResponse(want: try await catalog.want(body.blobs, caller: context.caller())))
        }
        group.put("blobs/:sha256") { request, context in
            let caller = try context.caller()
            let id = try context.blobID("sha256")
            try await receive(request.body, expected: id, caller: caller)
            return Response(status: .noContent)
        }
        group.get("blobs/:sha256") { _, context in
            let caller = try context.caller()
            let id = try context.blobID("sha256")
            guard let size = try await catalog.readableBlobSize(id, caller: caller), catalog.blobs.contains(id) else {
                throw ServerError.notFound("blob \(id)")
            }
            return try send(id, size: size)
        }
    }

    /// Streams the body into a staging file while hashing it, refuses it past the size limit or when
    /// it does not hash to `expected` (nothing is kept), else installs it durably under its address
    /// (the server keeps original bytes, so the verified staging file is renamed into place) and
    /// records that `caller` possesses it.
    func receive(_ body: RequestBody, expected: BlobID, caller: Account) async throws {
        let incoming = try catalog.blobs.incoming()
        defer { incoming.discard() }
        for try await buffer in body {
            if incoming.size + Int64(buffer.readableBytes) > limits.maxBlobSize {
                throw ServerError(413, "blob \(expected) is larger than the server's limit of \(limits.maxBlobSize) bytes")
            }
            try buffer.withUnsafeReadableBytes { try incoming.append($0) }
        }
        let staged: StagedBlob
        do {
            staged = try incoming.finish(expected: expected)
        } catch BlobError.mismatch(_, let actual) {
            throw ServerError(422, "the uploaded bytes hash to \(actual), not to \(expected): the blob was not kept")
        }
        let stored = try catalog.blobs.install([staged])[0]
        try await catalog.registerUpload(stored.id, size: stored.size, caller: caller)
    }

    /// Streams the blob's bytes from disk, hashing them on the way; a blob that turns out corrupt
    /// ends the response early (the client sees a failed transfer, never a complete bad blob).
    func send(_ id: BlobID, size: Int64) throws -> Response {
        let path = catalog.blobs.path(for: id)
        let body = ResponseBody(contentLength: Int(size)) { writer in
            let file = try ChunkedFileReader(path: path)
            let hasher = SHA256Hasher()
            var sent: Int64 = 0
            while true {
                let piece = try file.next()
                if piece.isEmpty { break }
                hasher.update(piece)
                sent += Int64(piece.count)
                try await writer.write(ByteBuffer(bytes: piece))
            }
            guard sent == size, hasher.finalize() == id else {
                throw ServerError(500, "blob \(id) is corrupt on the server")
            }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [.contentType: "application/octet-stream"], body: body)
    }
}
