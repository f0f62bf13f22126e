#if canImport(Glibc)
import Glibc
#endif
import CFileOps

/// A complete, fsynced staging file whose address is known, waiting to be installed or discarded.
/// The writer holds an exclusive `flock` on it until then, which is how fsck tells a staging file
/// that a running command owns from a stale one.
public final class StagedBlob: @unchecked Sendable {
    public let id: BlobID
    public let size: Int64
    public let storedSize: Int64
    public let encoding: BlobEncoding
    let path: String
    private var descriptor: FileDescriptor?

    init(id: BlobID, size: Int64, storedSize: Int64, encoding: BlobEncoding, path: String, descriptor: FileDescriptor) {
        self.id = id
        self.size = size
        self.storedSize = storedSize
        self.encoding = encoding
        self.path = path
        self.descriptor = descriptor
    }

    func sync() throws { try descriptor?.sync() }

    func release() {
        descriptor?.close()
        descriptor = nil
    }

    deinit {
        // A staged blob dropped without install or discard must not linger as a half-owned file.
        if let descriptor {
            descriptor.close()
            try? FileSystem.remove(path)
        }
    }
}

extension BlobStore {
    /// Streams `source` into a new staging file: hashing the original bytes, compressing as `mode`
    /// says, then fsyncing. Memory is bounded by the chunk size whatever the input's size.
    /// When `expected` is given and the content hashes otherwise, nothing is kept and `.mismatch` is thrown.
    /// `seekable` lets `auto` rewrite the blob uncompressed when xz turned out not to save 10 %.
    public func stage(from source: FileDescriptor, compression mode: CompressionMode,
                      expected: BlobID? = nil, seekable: Bool = true) throws -> StagedBlob {
        let chunk = DirectIO.allocateChunk()
        defer { DirectIO.recycle(chunk) }
        var first = try source.readFully(into: chunk)

        var encoding = try chooseEncoding(source, mode: mode, chunk: chunk, first: &first, seekable: seekable)
        let staged = try stageStream(source, chunk: chunk, firstCount: first, encoding: encoding,
                                     preset: mode == .auto ? BlobStore.autoPreset : BlobStore.xzPreset)
        if mode == .auto, encoding == .xz, seekable,
           Double(staged.storedSize) > 0.9 * Double(staged.size) {
            // xz did not save 10 %: keep the original bytes instead, which reads faster.
            discard(staged)
            try source.seek(to: 0)
            let n = try source.readFully(into: chunk)
            encoding = .identity
            let plain = try stageStream(source, chunk: chunk, firstCount: n, encoding: .identity, preset: 0)
            return try check(plain, expected: expected)
        }
        return try check(staged, expected: expected)
    }

    /// The encoding `mode` asks for this content. `chunk` holds the first `first` bytes of `source`;
    /// for `auto` on a seekable source up to 16 more chunks spread over the file are read to estimate
    /// xz's ratio, then the first chunk is read again.
    func chooseEncoding(_ source: FileDescriptor, mode: CompressionMode, chunk: UnsafeMutableRawBufferPointer,
                        first: inout Int, seekable: Bool) throws -> BlobEncoding {
        switch mode {
        case .none: return .identity
        case .xz: return .xz
        case .auto:
            let head = UnsafeRawBufferPointer(rebasing: chunk[..<first])
            if !seekable { return CompressionAdvisor.worthCompressing(head) ? .xz : .identity }
            guard first >= 512 && !CompressionAdvisor.isCompressedFormat(head) else { return .identity }
            let ratio = try CompressionAdvisor.estimatedRatio(of: source, headCount: first, in: chunk)
            try source.seek(to: 0)
            first = try source.readFully(into: chunk)
            return ratio <= CompressionAdvisor.autoMaximumRatio ? .xz : .identity
        }
    }

    /// Starts a blob that arrives piece by piece (a network body) as a new staging file.
    public func incoming() throws -> IncomingBlob {
        let (fd, path) = try createStagingFile()
        return IncomingBlob(fd: fd, path: path)
    }

    /// The staged original bytes, stored as `mode` says: the same staging file when that keeps them
    /// uncompressed (installing it then renames it into place: every byte written once), else a
    /// compressed copy staged from it (the original is dropped).
    public func encoded(_ staged: StagedBlob, compression mode: CompressionMode) throws -> StagedBlob {
        guard staged.encoding == .identity, mode != .none else { return staged }
        let fd = try FileDescriptor.open(staged.path, O_RDONLY)
        defer { fd.close() }
        let chunk = DirectIO.allocateChunk()
        defer { DirectIO.recycle(chunk) }
        var first = try fd.readFully(into: chunk)
        if try chooseEncoding(fd, mode: mode, chunk: chunk, first: &first, seekable: true) == .identity { return staged }
        try fd.seek(to: 0)
        let packed = try stage(from: fd, compression: mode, expected: staged.id)
        discard(staged)
        return packed
    }

    /// Stages in-memory bytes (small blobs, tests).
    public func stage(bytes: [UInt8], compression mode: CompressionMode) throws -> StagedBlob {
        let encoding: BlobEncoding
        switch mode {
        case .none: encoding = .identity
        case .xz: encoding = .xz
        case .auto:
            encoding = bytes.withUnsafeBytes { CompressionAdvisor.worthCompressing($0) } ? .xz : .identity
        }
        return try withStagingFile { fd in
            let hasher = SHA256Hasher()
            hasher.update(bytes)
            var stored: Int64 = 0
            if encoding == .xz {
                let xz = try XZStream(.compress(preset: mode == .auto ? BlobStore.autoPreset : BlobStore.xzPreset))
                let sink: (UnsafeRawBufferPointer) throws -> Void = { try fd.write($0); stored += Int64($0.count) }
                try bytes.withUnsafeBytes { try xz.process($0, sink: sink) }
                try xz.finish(sink: sink)
            } else {
                try fd.write(bytes)
                stored = Int64(bytes.count)
            }
            return (hasher.finalize(), Int64(bytes.count), stored, encoding)
        }
    }

    private func check(_ staged: StagedBlob, expected: BlobID?) throws -> StagedBlob {
        if let expected, expected != staged.id {
            discard(staged)
            throw BlobError.mismatch(expected: expected, actual: staged.id)
        }
        return staged
    }

    private func stageStream(_ source: FileDescriptor, chunk: UnsafeMutableRawBufferPointer, firstCount: Int,
                             encoding: BlobEncoding, preset: UInt32) throws -> StagedBlob {
        try withStagingFile { fd in
            let hasher = SHA256Hasher()
            let xz = encoding == .xz ? try XZStream(.compress(preset: preset)) : nil
            let writer = DirectWriter(fd)
            var size: Int64 = 0
            var stored: Int64 = 0
            let sink: (UnsafeRawBufferPointer) throws -> Void = { try writer.write($0); stored += Int64($0.count) }
            var count = firstCount
            // A large file's chunks are written on a thread of their own while the next is read into the
            // other buffer and hashed (all on this thread when no thread can be started).
            let thread = try xz == nil && source.stat().size >= Self.overlappedSize ? try? WriterThread(sink) : nil
            let other = thread.map { _ in DirectIO.allocateChunk() }
            defer {
                thread?.stop()  // before the buffer it may still be writing is given back
                other.map(DirectIO.recycle)
            }
            var buffers = (chunk, other ?? chunk)
            while count > 0 {
                let piece = UnsafeRawBufferPointer(rebasing: buffers.0[..<count])
                hasher.update(piece)
                size += Int64(count)
                if let thread {
                    try thread.wait()
                    thread.start(piece)
                    swap(&buffers.0, &buffers.1)
                } else if let xz {
                    try xz.process(piece, sink: sink)
                } else {
                    try sink(piece)
                }
                count = try source.readFully(into: buffers.0)
            }
            try thread?.wait()
            try xz?.finish(sink: sink)
            try writer.finish()
            return (hasher.finalize(), size, stored, encoding)
        }
    }

    /// Files at least this large are written on a thread of their own while they are hashed
    /// (`WriterThread`); for a smaller one the thread costs more than it saves, and a many-file import
    /// keeps every core busy with a file each.
    static let overlappedSize: Int64 = 8 << 20

    /// Creates `interim/<random>.interim` locked by this process, lets `fill` write it, fsyncs it.
    /// On any error the staging file is removed before the error propagates.
    private func withStagingFile(
        _ fill: (FileDescriptor) throws -> (BlobID, Int64, Int64, BlobEncoding)
    ) throws -> StagedBlob {
        let (fd, path) = try createStagingFile()
        do {
            let (id, size, stored, encoding) = try fill(fd)
            // Not durable yet: `install` flushes the batch before any rename. Starting the writeback
            // now lets the disk work while the next file is hashed.
            _ = cfileops_start_writeback(fd.raw)
            return StagedBlob(id: id, size: size, storedSize: stored, encoding: encoding, path: path, descriptor: fd)
        } catch {
            fd.close()
            try? FileSystem.remove(path)
            throw error
        }
    }

    /// Creates `interim/<random>.interim`, open for writing and locked by this process.
    fileprivate func createStagingFile() throws -> (FileDescriptor, String) {
        let path = interimPath + "/" + SecureRandom.hex(16) + ".interim"
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
        } catch let error as PathError where error.isNotFound {
            try FileSystem.makeDirectories(interimPath, mode: 0o700)
            fd = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
        }
        do {
            // Blocking: the file is new and randomly named, so the only other holder can be a
            // momentary probe (fsck, gc asking whether it is owned). A failed non-blocking attempt
            // would leave a staging file that looks stale while it is being written.
            try fd.lock()
        } catch {
            fd.close()
            try? FileSystem.remove(path)
            throw error
        }
        return (fd, path)
    }

    /// Drops a staging file that will not be installed.
    public func discard(_ staged: StagedBlob) {
        staged.release()
        try? FileSystem.remove(staged.path)
    }

    /// Batches at least this large are flushed with two syncfs calls instead of an fsync per file
    /// and per folder.
    static let syncfsBatch = 4

    /// Installs staged blobs durably: makes their bytes durable, renames each into `blobs/`, then makes
    /// the renames durable — an fsync per file and per touched folder for a few blobs, one syncfs
    /// before and one after the renames for a batch. Either way no rename can reach the disk before
    /// the bytes it names. When an identical blob is already installed the staging file is dropped and
    /// the installed file's mtime refreshed, so a gc grace measured from mtime cannot sweep it before
    /// the caller's reference commits. On return every blob is durable under its address.
    @discardableResult
    public func install(_ staged: [StagedBlob]) throws -> [StoredBlob] {
        let batched = staged.count >= Self.syncfsBatch
        if batched {
            try FileSystem.syncFileSystem(containing: interimPath)
        } else {
            for s in staged { try s.sync() }
        }
        var results: [StoredBlob] = []
        var touched = Set<String>()
        var pending = staged[...]
        defer { for s in pending { discard(s) } }
        while let s = pending.popFirst() {
            defer { discard(s) }
            let target = path(for: s.id)
            if let existing = try FileSystem.status(target), existing.isRegular,
               existing.size == s.storedSize || s.encoding == .identity && existing.size == s.size {
                try FileSystem.touch(target)
                results.append(StoredBlob(id: s.id, size: s.size, storedSize: existing.size,
                                          encoding: existing.size == s.storedSize ? s.encoding : .identity,
                                          deduplicated: true))
                continue
            }
            let folder = blobsPath + "/" + s.id.fanOut
            do {
                do {
                    try FileSystem.rename(s.path, target)
                } catch let error as PathError where error.isNotFound {
                    try FileSystem.makeDirectories(folder, mode: 0o700)
                    touched.insert(blobsPath)
                    try FileSystem.rename(s.path, target)
                }
            } catch let error as PathError where error.path == s.path {
                // Name the blob and where it should go (e.g. something that is not a file is there).
                throw PathError("installing blob \(s.id) as", path: target, errno: error.errno)
            }
            touched.insert(folder)
            results.append(StoredBlob(id: s.id, size: s.size, storedSize: s.storedSize, encoding: s.encoding,
                                      deduplicated: false))
        }
        if batched {
            if !touched.isEmpty { try FileSystem.syncFileSystem(containing: blobsPath) }
        } else {
            for folder in touched.sorted(by: { $0.count > $1.count }) { try FileSystem.syncDirectory(folder) }
        }
        return results
    }

    /// Stages and installs one file's content.
    public func write(from source: FileDescriptor, compression: CompressionMode,
                      expected: BlobID? = nil) throws -> StoredBlob {
        try install([stage(from: source, compression: compression, expected: expected)])[0]
    }

    public func write(bytes: [UInt8], compression: CompressionMode) throws -> StoredBlob {
        try install([stage(bytes: bytes, compression: compression)])[0]
    }
}

/// A blob arriving piece by piece (a network body): each piece is hashed and written (direct I/O) to
/// a locked staging file in `interim/` as it arrives, so memory stays one piece whatever the size.
/// `finish` checks the address and hands over a `StagedBlob` to install; anything else (`discard`,
/// an error, dropping it) removes the file.
public final class IncomingBlob: @unchecked Sendable {
    private let fd: FileDescriptor
    private let path: String
    private let writer: DirectWriter
    private let hasher = SHA256Hasher()
    private var open = true
    public private(set) var size: Int64 = 0

    init(fd: FileDescriptor, path: String) {
        self.fd = fd
        self.path = path
        writer = DirectWriter(fd)
    }

    public func append(_ bytes: UnsafeRawBufferPointer) throws {
        hasher.update(bytes)
        try writer.write(bytes)
        size += Int64(bytes.count)
    }

    /// The complete staged blob; throws `.mismatch` (the file removed) when the bytes do not hash to
    /// `expected`. Not durable yet: installing it is.
    public func finish(expected: BlobID) throws -> StagedBlob {
        try finish(checking: expected)
    }

    /// The complete staged blob, addressed by the hash of the bytes received (an upload whose address
    /// the sender did not state: a file from the web view's form).
    public func finishAddressedByContent() throws -> StagedBlob {
        try finish(checking: nil)
    }

    private func finish(checking expected: BlobID?) throws -> StagedBlob {
        do {
            try writer.finish()
        } catch {
            discard()
            throw error
        }
        let actual = hasher.finalize()
        if let expected, actual != expected {
            discard()
            throw BlobError.mismatch(expected: expected, actual: actual)
        }
        open = false
        _ = cfileops_start_writeback(fd.raw)
        return StagedBlob(id: actual, size: size, storedSize: size, encoding: .identity, path: path, descriptor: fd)
    }

    public func discard() {
        guard open else { return }
        open = false
        fd.close()
        try? FileSystem.remove(path)
    }

    deinit { discard() }
}
