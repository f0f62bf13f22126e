#if canImport(Glibc)
import Glibc
#endif
import CFileOps
import Synchronization

enum DirectIO {
    /// Memory, offset and length alignment that every common device accepts (logical blocks ≤ 4 KiB).
    static let alignment = 4096

    /// Chunks given back and kept for the next caller (their addresses). A chunk is allocated per blob
    /// written, and a fresh 1 MiB allocation is memory the kernel must zero and fault in again (glibc
    /// unmaps blocks this large when they are freed): on this project's machine that was a fifth of
    /// the sync server's CPU during a push. At most `kept` are held, so memory stays bounded.
    private static let pool = Mutex<[Int]>([])
    static let kept = 8

    /// A chunk-sized buffer aligned for direct I/O: read into it and write it whole without a copy.
    /// Give it back with `recycle`.
    static func allocateChunk() -> UnsafeMutableRawBufferPointer {
        if let address = pool.withLock({ $0.popLast() }), let base = UnsafeMutableRawPointer(bitPattern: address) {
            return UnsafeMutableRawBufferPointer(start: base, count: BlobStore.chunkSize)
        }
        return .allocate(byteCount: BlobStore.chunkSize, alignment: alignment)
    }

    /// Takes back a chunk from `allocateChunk`: kept for reuse, or freed when enough are kept.
    static func recycle(_ chunk: UnsafeMutableRawBufferPointer) {
        guard let base = chunk.baseAddress else { return }
        let isKept = pool.withLock { free in
            guard free.count < kept else { return false }
            free.append(Int(bitPattern: base))
            return true
        }
        if !isKept { chunk.deallocate() }
    }
}

/// Writes a new file's bytes straight to the device (O_DIRECT) in aligned blocks, so a blob's bytes are
/// copied once (from the caller's buffer to the disk) instead of first into fresh page-cache pages
/// that the flush then writes out. Blobs are written once and rarely read soon after, so caching them
/// only evicts what the user is working on; on this project's machine filling fresh page-cache pages
/// cost ~2.7 s of CPU per GB, more than hashing. Durability is unchanged: O_DIRECT does not flush the
/// device's cache nor the file's metadata, so staged files are still fsynced (or syncfs'd) before
/// they are installed. Where the file system refuses direct I/O (EINVAL) the writer goes on through
/// the page cache; the file's last partial block is always written that way.
final class DirectWriter {
    static let alignment = DirectIO.alignment

    private let fd: FileDescriptor
    private var direct: Bool
    /// Allocated on the first write that cannot go straight from the caller's buffer.
    private var buffer: UnsafeMutableRawBufferPointer?
    private var pending = 0

    init(_ fd: FileDescriptor) {
        self.fd = fd
        direct = cfileops_set_direct(fd.raw, 1) == 0
    }

    deinit { buffer.map(DirectIO.recycle) }

    /// Writes aligned whole blocks from `bytes` itself; anything else is gathered into full chunks.
    func write(_ bytes: UnsafeRawBufferPointer) throws {
        var rest = bytes
        if pending == 0, let base = bytes.baseAddress, Int(bitPattern: base) % Self.alignment == 0 {
            let whole = bytes.count & ~(Self.alignment - 1)
            if whole > 0 { try emit(UnsafeRawBufferPointer(rebasing: bytes[..<whole])) }
            rest = UnsafeRawBufferPointer(rebasing: bytes[whole...])
        }
        while !rest.isEmpty {
            let buffer = self.buffer ?? DirectIO.allocateChunk()
            self.buffer = buffer
            let n = min(rest.count, buffer.count - pending)
            UnsafeMutableRawBufferPointer(rebasing: buffer[pending..<pending + n])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: rest[..<n]))
            pending += n
            rest = UnsafeRawBufferPointer(rebasing: rest[n...])
            if pending == buffer.count {
                try emit(UnsafeRawBufferPointer(buffer))
                pending = 0
            }
        }
    }

    /// Writes what is buffered: whole blocks directly, the partial last block through the page cache.
    func finish() throws {
        guard let buffer, pending > 0 else { return }
        let whole = pending & ~(Self.alignment - 1)
        if whole > 0 { try emit(UnsafeRawBufferPointer(rebasing: buffer[..<whole])) }
        if pending > whole {
            stopDirect()
            try emit(UnsafeRawBufferPointer(rebasing: buffer[whole..<pending]))
        }
        pending = 0
    }

    private func emit(_ bytes: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[done...])
            let n = Glibc.write(fd.raw, rest.baseAddress, rest.count)
            if n >= 0 {
                done += n
                continue
            }
            let code = errno
            if code == EINTR { continue }
            if code == EINVAL && direct {
                // The file system or device wants another alignment, or no direct I/O at all.
                stopDirect()
                continue
            }
            throw PathError("writing", path: fd.path, errno: code)
        }
    }

    private func stopDirect() {
        if direct {
            _ = cfileops_set_direct(fd.raw, 0)
            direct = false
        }
    }
}

/// A file read piece by piece into the caller's memory (a network buffer being filled, so the bytes
/// are copied once), for streaming a blob elsewhere. Reads go through the page cache: the kernel's
/// readahead keeps the disk busy while the caller hashes and sends. Closed when dropped.
public final class ChunkedFileReader: @unchecked Sendable {
    private let fd: FileDescriptor

    public init(path: String) throws {
        fd = try FileDescriptor.open(path, O_RDONLY)
    }

    deinit { fd.close() }

    public func size() throws -> Int64 { try fd.stat().size }

    /// Fills `buffer` from the file; returns how many bytes it read (fewer only at the file's end).
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try fd.readFully(into: buffer)
    }
}
