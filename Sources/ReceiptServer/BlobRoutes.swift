import BlobStore
import Hummingbird
import NIOCore
import ReceiptWire

/// `/v1/blobs…`: have/want, upload (verified against the address), download (authorized by zone),
/// one blob per request or many in a bundle.
struct BlobRoutes {
    let catalog: any ServerStore
    let limits: ServerLimits

    func register(_ group: RouterGroup<ServerContext>) {
        group.post("blobs/want") { request, context in
            let body = try await request.decodeJSON(WireWantRequest.self, limit: limits.maxSmallJSON)
            guard body.blobs.count <= WireProtocol.maxWantBlobs else {
                throw ServerError(.tooLarge, "at most \(WireProtocol.maxWantBlobs) addresses per request, not \(body.blobs.count)")
            }
            return try jsonResponse(WireWantResponse(want: try await catalog.want(body.blobs, caller: context.caller())))
        }
        group.put("blobs/:sha256") { request, context in
            let caller = try context.caller()
            let id = try context.blobID("sha256")
            try request.refuseBodyOver(limits.maxBlobSize)
            let staged = try await receive(request.body, expected: id, declared: request.headers[.contentType])
            try await install([staged], caller: caller)
            return Response(status: .noContent)
        }
        group.get("blobs/:sha256") { _, context in
            let caller = try context.caller()
            let id = try context.blobID("sha256")
            let size = try await readable([id], caller: caller)[0]
            return send(id, size: size)
        }
        group.post("blobs/bundle") { request, context in
            try request.refuseBodyOver(limits.maxBundleSize)
            try await receiveBundle(request.body, caller: try context.caller())
            return Response(status: .noContent)
        }
        group.post("blobs/fetch") { request, context in
            let caller = try context.caller()
            let body = try await request.decodeJSON(WireFetchRequest.self, limit: limits.maxSmallJSON)
            guard body.blobs.count <= WireBundle.maxBlobs else {
                throw ServerError(.tooLarge, "at most \(WireBundle.maxBlobs) blobs per bundle, not \(body.blobs.count)")
            }
            var ids: [BlobID] = []
            for hex in body.blobs {
                guard WireName.isValidBlobAddress(hex), let id = BlobID(hex: hex) else {
                    throw ServerError.bad("\(hex) is not a blob address (64 lowercase hex digits)")
                }
                ids.append(id)
            }
            return sendBundle(Array(zip(ids, try await readable(ids, caller: caller))))
        }
    }

    /// The sizes of blobs `caller` may read and the server holds; 404 naming the first other one
    /// (absent and not readable get the same answer).
    func readable(_ ids: [BlobID], caller: Account) async throws -> [Int64] {
        let sizes = try await catalog.readableBlobSizes(ids, caller: caller)
        return try zip(ids, sizes).map { id, size in
            guard let size, catalog.blobs.contains(id) else { throw ServerError.notFound("blob \(id)") }
            return size
        }
    }

    // MARK: Receiving

    /// Streams the body into a staging file while hashing it; refuses it past the size limit, when
    /// it does not hash to `expected`, or when it is not of its `declared` type (nothing is kept).
    func receive(_ body: RequestBody, expected: BlobID, declared: String?) async throws -> StagedBlob {
        let incoming = try catalog.blobs.incoming()
        defer { incoming.discard() }
        var head = HeadBytes()
        for try await buffer in body {
            try checkSize(incoming.size + Int64(buffer.readableBytes), of: expected)
            try buffer.withUnsafeReadableBytes {
                head.take($0)
                try incoming.append($0)
            }
        }
        if let declared { try DeclaredTypes.check(head.bytes, declared: declared, what: "blob \(expected)") }
        return try finish(incoming, expected: expected)
    }

    /// Receives a bundle: each blob is staged and verified as it arrives, as `receive` does; once the
    /// body is complete they are installed together (one flush) and recorded in one transaction. A
    /// bad blob or a cut-off body keeps none of the bundle.
    func receiveBundle(_ body: RequestBody, caller: Account) async throws {
        var reader = WireBundleReader()
        var begun = 0
        var staged: [StagedBlob] = []
        var current: (id: BlobID, blob: IncomingBlob)?
        defer {
            current?.blob.discard()
            for s in staged { catalog.blobs.discard(s) }
        }
        // The body is read to its end even after a refusal, so the client reads the answer rather
        // than a connection closed under its upload.
        var refusal: Error?
        var total: Int64 = 0
        for try await buffer in body where refusal == nil {
            total += Int64(buffer.readableBytes)
            if total > limits.maxBundleSize {
                refusal = ServerError(.tooLarge, "the bundle is larger than the server's limit of \(limits.maxBundleSize) bytes")
                continue
            }
            do {
                try buffer.withUnsafeReadableBytes { piece in
                    try reader.feed(piece) { event in
                        switch event {
                        case .begin(let digest, let length):
                            let id = BlobID(digest: digest)
                            begun += 1
                            guard begun <= WireBundle.maxBlobs else {
                                throw ServerError(.tooLarge, "at most \(WireBundle.maxBlobs) blobs per bundle")
                            }
                            try checkSize(length, of: id)
                            current = (id, try catalog.blobs.incoming())
                        case .bytes(let bytes):
                            try current?.blob.append(bytes)
                        case .end:
                            if let (id, blob) = current {
                                current = nil
                                staged.append(try finish(blob, expected: id))
                            }
                        }
                    }
                }
            } catch let error as WireBundleError {
                refusal = ServerError.bad(error.description)
            } catch {
                refusal = error
            }
        }
        if let refusal { throw refusal }
        guard reader.atBoundary else {
            throw ServerError.bad("the bundle ends in the middle of blob \(current.map { "\($0.id)" } ?? "header")")
        }
        let complete = staged
        staged = []
        try await install(complete, caller: caller)
    }

    func checkSize(_ size: Int64, of id: BlobID) throws {
        if size > limits.maxBlobSize {
            throw ServerError(.tooLarge, "blob \(id) is larger than the server's limit of \(limits.maxBlobSize) bytes")
        }
    }

    func finish(_ incoming: IncomingBlob, expected: BlobID) throws -> StagedBlob {
        do {
            return try incoming.finish(expected: expected)
        } catch BlobError.mismatch(_, let actual) {
            throw ServerError(.unprocessable, "the uploaded bytes hash to \(actual), not to \(expected): the blob was not kept")
        }
    }

    /// Records that `caller` possesses verified blobs (refused past its quota), then installs them
    /// durably under their addresses (the server keeps original bytes, so each staging file is renamed
    /// into place). Recording first is what keeps the server's gc from deleting a blob being uploaded.
    func install(_ staged: [StagedBlob], caller: Account) async throws {
        try await catalog.installUploads(staged, caller: caller)
    }

    // MARK: Sending

    /// Streams the blob's bytes from disk, hashing them on the way; a blob that turns out corrupt
    /// ends the response early (the client sees a failed transfer, never a complete bad blob).
    func send(_ id: BlobID, size: Int64) -> Response {
        let store = catalog.blobs
        let body = ResponseBody(contentLength: Int(size)) { writer in
            var out = OutgoingPieces()
            try await out.append(id, size: size, from: store) { try await writer.write($0) }
            try await out.flush { try await writer.write($0) }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [.contentType: "application/octet-stream"], body: body)
    }

    /// Streams the blobs as a bundle (headers and small blobs share pieces); cut short at a blob whose
    /// file is not its recorded size. Its bytes are not hashed here: the only reader of bundles is
    /// `receipt sync`, which checks every blob against its address before it keeps it, and a pull
    /// spent a fifth of the server's CPU hashing them a second time.
    func sendBundle(_ blobs: [(BlobID, Int64)]) -> Response {
        let store = catalog.blobs
        let length = blobs.reduce(0) { $0 + Int64(WireBundle.headerSize) + $1.1 }
        let body = ResponseBody(contentLength: Int(length)) { writer in
            var out = OutgoingPieces()
            for (id, size) in blobs {
                try await out.append(WireBundle.header(sha256: id.digest, length: size)) { try await writer.write($0) }
                try await out.append(id, size: size, from: store, verify: false) { try await writer.write($0) }
            }
            try await out.flush { try await writer.write($0) }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [.contentType: WireBundle.contentType], body: body)
    }
}

/// A response body assembled in pieces of up to 1 MiB: blob files are read straight into the piece
/// being filled (no buffer in between), and a full piece is handed to `send`.
struct OutgoingPieces {
    static let capacity = BlobStore.chunkSize
    private var piece = ByteBufferAllocator().buffer(capacity: capacity)

    mutating func flush(_ send: (ByteBuffer) async throws -> Void) async throws {
        guard piece.readableBytes > 0 else { return }
        try await send(piece)
        piece = ByteBufferAllocator().buffer(capacity: Self.capacity)
    }

    mutating func append(_ bytes: [UInt8], _ send: (ByteBuffer) async throws -> Void) async throws {
        if piece.writableBytes < bytes.count { try await flush(send) }
        piece.writeBytes(bytes)
    }

    /// Appends the blob file's bytes, then throws unless they were exactly `size` bytes and, with
    /// `verify`, hash to `id`. A piece is sent only when more of the blob is still to be read, so the
    /// blob's last bytes are still held when the check fails: a client never receives it whole.
    mutating func append(_ id: BlobID, size: Int64, from store: BlobStore, verify: Bool = true,
                         _ send: (ByteBuffer) async throws -> Void) async throws {
        let file = try ChunkedFileReader(path: store.path(for: id))
        let hasher = verify ? SHA256Hasher() : nil
        var read: Int64 = 0
        while read < size {
            if piece.writableBytes == 0 { try await flush(send) }
            let n = try piece.writeWithUnsafeMutableBytes(minimumWritableBytes: 0) { free in
                let want = UnsafeMutableRawBufferPointer(rebasing: free[..<Int(min(Int64(free.count), size - read))])
                let n = try file.read(into: want)
                hasher?.update(UnsafeRawBufferPointer(rebasing: want[..<n]))
                return n
            }
            if n == 0 { break }
            read += Int64(n)
        }
        var extra: UInt8 = 0
        let longer = try withUnsafeMutableBytes(of: &extra) { try file.read(into: $0) } > 0
        guard read == size, !longer, hasher.map({ $0.finalize() == id }) ?? true else {
            throw ServerError(.failed, "blob \(id) is corrupt on the server")
        }
    }
}
