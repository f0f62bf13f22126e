import BlobStore
import Hummingbird
import NIOCore
import ReceiptWire
#if canImport(Glibc)
import Glibc
#endif

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
            let size = try await receive(request.body, expected: id)
            try await catalog.registerUpload(id, size: size, caller: caller)
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
    /// it does not hash to `expected` (nothing is kept), else installs it durably under its address.
    func receive(_ body: RequestBody, expected: BlobID) async throws -> Int64 {
        let store = catalog.blobs
        let path = store.interimPath + "/upload-" + SecureRandom.hex(16) + ".interim"
        let fd = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_EXCL, mode: 0o644)
        defer {
            fd.close()
            try? FileSystem.remove(path)
        }
        _ = flock(fd.raw, LOCK_EX | LOCK_NB)
        let hasher = SHA256Hasher()
        var size: Int64 = 0
        for try await buffer in body {
            size += Int64(buffer.readableBytes)
            if size > limits.maxBlobSize {
                throw ServerError(413, "blob \(expected) is larger than the server's limit of \(limits.maxBlobSize) bytes")
            }
            try buffer.withUnsafeReadableBytes { bytes in
                hasher.update(bytes)
                try fd.write(bytes)
            }
        }
        let actual = hasher.finalize()
        guard actual == expected else {
            throw ServerError(422, "the uploaded bytes hash to \(actual), not to \(expected): the blob was not kept")
        }
        if !store.contains(expected) {
            // The server keeps original bytes, so the verified staging file is the blob: make it
            // durable and rename it into place (the store's install order: fsync, rename, fsync folder).
            try fd.sync()
            let folder = store.blobsPath + "/" + expected.fanOut
            let created = !FileSystem.exists(folder)
            if created { try FileSystem.makeDirectories(folder) }
            try FileSystem.rename(path, store.path(for: expected))
            try FileSystem.syncDirectory(folder)
            if created { try FileSystem.syncDirectory(store.blobsPath) }
        }
        return size
    }

    /// Streams the blob's bytes from disk, hashing them on the way; a blob that turns out corrupt
    /// ends the response early (the client sees a failed transfer, never a complete bad blob).
    func send(_ id: BlobID, size: Int64) throws -> Response {
        let path = catalog.blobs.path(for: id)
        let body = ResponseBody(contentLength: Int(size)) { writer in
            let fd = try FileDescriptor.open(path, O_RDONLY)
            defer { fd.close() }
            let hasher = SHA256Hasher()
            let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
            defer { chunk.deallocate() }
            var sent: Int64 = 0
            while true {
                let n = try fd.read(into: chunk)
                if n == 0 { break }
                let piece = UnsafeRawBufferPointer(rebasing: chunk[..<n])
                hasher.update(piece)
                sent += Int64(n)
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
