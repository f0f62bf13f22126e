#if canImport(Glibc)
import Glibc
#endif
import CFileOps

extension BlobStore {
    /// Streams the blob's original bytes to `sink`, decompressing and hashing on the way.
    /// Throws `.missing` when no file holds it and `.corrupt` when the bytes do not decode or do not
    /// hash to `id` (after the sink has seen them: callers that must not expose bad bytes write to a
    /// staging place and drop it on error). Returns the original size.
    @discardableResult
    public func read(_ id: BlobID, encoding: BlobEncoding,
                     into sink: (UnsafeRawBufferPointer) throws -> Void) throws -> Int64 {
        let fd = try openInstalled(id)
        defer { fd.close() }
        return try Self.decode(fd, id: id, encoding: encoding, into: sink)
    }

    /// Finds a blob file's encoding from its content alone (`verifyEitherEncoding`).
    public func detectEncoding(_ id: BlobID) throws -> BlobEncoding? {
        try verifyEitherEncoding(id)?.encoding
    }

    /// Copies the blob's original bytes to a new file at `destination` (which must not exist).
    /// Identity blobs are cloned (FICLONE) where the file system shares extents; otherwise the bytes
    /// are streamed device to device (direct I/O), hashed on the way, and the copy is removed again if
    /// they do not hash to `id`. Never hard-linked, so editing the copy cannot touch the store.
    /// With `verify`, a clone is re-read and hashed too.
    public func copy(_ id: BlobID, encoding: BlobEncoding, to destination: String, verify: Bool = true) throws {
        let out = try FileDescriptor.open(destination, O_WRONLY | O_CREAT | O_EXCL, mode: 0o644)
        defer { out.close() }
        try copy(id, encoding: encoding, into: out, verify: verify)
    }

    /// `copy(_:encoding:to:)` into a new file created (empty) by the caller; removed on failure (by
    /// its path) unless `removeOnFailure` is false, for a caller that removes it where it created it.
    public func copy(_ id: BlobID, encoding: BlobEncoding, into out: FileDescriptor, verify: Bool = true,
                     removeOnFailure: Bool = true) throws {
        do {
            let source = try openInstalled(id)
            defer { source.close() }
            if encoding == .identity && cfileops_ficlone(out.raw, source.raw) == 0 {
                if verify {
                    // The clone itself, opened again through its descriptor: its path may name another file by now.
                    let (actual, _) = try SHA256Hasher.hash(fileAt: "/proc/self/fd/\(out.raw)")
                    if actual != id { throw BlobError.corrupt(id, detail: "its bytes hash to \(actual)") }
                }
                return
            }
            let writer = DirectWriter(out)
            _ = try Self.decode(source, id: id, encoding: encoding) { try writer.write($0) }
            try writer.finish()
        } catch {
            if removeOnFailure { try? FileSystem.remove(out.path) }
            throw error
        }
    }

    func openInstalled(_ id: BlobID) throws -> FileDescriptor {
        do {
            return try FileDescriptor.open(path(for: id), O_RDONLY)
        } catch let error as PathError where error.isNotFound {
            throw BlobError.missing(id)
        }
    }

    static func decode(_ fd: FileDescriptor, id: BlobID, encoding: BlobEncoding,
                       into sink: (UnsafeRawBufferPointer) throws -> Void) throws -> Int64 {
        let hasher = SHA256Hasher()
        var size: Int64 = 0
        try withoutActuallyEscaping(sink) { sink in
        let emit: (UnsafeRawBufferPointer) throws -> Void = { piece in
            hasher.update(piece)
            size += Int64(piece.count)
            try sink(piece)
        }
        let chunk = DirectIO.allocateChunk()
        defer { DirectIO.recycle(chunk) }
        do {
            let xz = encoding == .xz ? try XZStream(.decompress) : nil
            while true {
                let n = try fd.read(into: chunk)
                if n == 0 { break }
                let piece = UnsafeRawBufferPointer(rebasing: chunk[..<n])
                if let xz { try xz.process(piece, sink: emit) } else { try emit(piece) }
            }
            try xz?.finish(sink: emit)
        } catch let error as XZError {
            throw BlobError.corrupt(id, detail: "its xz stream does not decode (\(error))")
        }
        }
        let actual = hasher.finalize()
        if actual != id { throw BlobError.corrupt(id, detail: "its bytes hash to \(actual)") }
        return size
    }
}

extension BlobStore {
    /// Every file under `blobs/`, sorted by path; files whose name or folder is not a blob's come
    /// back with `id == nil`.
    public func enumerate() throws -> [BlobFile] {
        var files: [BlobFile] = []
        try forEachFile { files.append($0) }
        return files
    }

    /// `enumerate`, one file at a time: only one fan-out folder's names are held, however many blobs
    /// the store has.
    public func forEachFile(_ body: (BlobFile) throws -> Void) throws {
        for folder in try FileSystem.contents(of: blobsPath).sorted() {
            let folderPath = blobsPath + "/" + folder
            guard let st = try FileSystem.status(folderPath) else { continue }
            if !st.isDirectory {
                try body(BlobFile(path: folderPath, id: nil, storedSize: st.size, mtimeNanoseconds: st.mtimeNanoseconds))
                continue
            }
            for name in try FileSystem.contents(of: folderPath).sorted() {
                let path = folderPath + "/" + name
                guard let fst = try FileSystem.status(path) else { continue }
                var id = BlobID(hex: name)
                if id?.hex != name || id?.fanOut != folder || !fst.isRegular { id = nil }
                try body(BlobFile(path: path, id: id, storedSize: fst.size, mtimeNanoseconds: fst.mtimeNanoseconds))
            }
        }
    }

    /// Every file under `interim/`, with whether a running process still owns it.
    public func interimFiles() throws -> [InterimFile] {
        try FileSystem.contents(of: interimPath).sorted().compactMap { name in
            let path = interimPath + "/" + name
            guard let st = try FileSystem.status(path) else { return nil }
            return InterimFile(path: path, mtimeNanoseconds: st.mtimeNanoseconds, owned: Self.isLocked(path))
        }
    }

    /// True when another process holds an flock on the file.
    static func isLocked(_ path: String) -> Bool {
        guard let fd = try? FileDescriptor.open(path, O_RDONLY | O_CLOEXEC) else { return false }
        defer { fd.close() }
        guard let taken = try? fd.tryLock() else { return false }
        if taken { fd.unlock() }
        return !taken
    }

    /// Removes installed blobs, then fsyncs each touched folder once. Absent blobs are not an error.
    public func remove(_ ids: [BlobID]) throws {
        var touched = Set<String>()
        for id in ids {
            try FileSystem.remove(path(for: id))
            touched.insert(blobsPath + "/" + id.fanOut)
        }
        for folder in touched.sorted() where FileSystem.exists(folder) { try FileSystem.syncDirectory(folder) }
    }

    /// Moves a file (a corrupt blob, an unknown file) into `quarantine/`, never deleting it.
    /// Returns where it now lives.
    @discardableResult
    public func quarantine(_ path: String) throws -> String {
        try FileSystem.makeDirectories(quarantinePath, mode: 0o700)
        let name = (path.split(separator: "/").last.map(String.init) ?? "file")
        var target = quarantinePath + "/" + name
        var n = 1
        while FileSystem.exists(target) {
            n += 1
            target = quarantinePath + "/" + name + "." + String(n)
        }
        try FileSystem.rename(path, target)
        try FileSystem.syncDirectory(quarantinePath)
        try FileSystem.syncDirectory(FileSystem.parentPath(path))
        return target
    }
}
