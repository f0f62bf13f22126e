#if canImport(Glibc)
import Glibc
#endif
import CSHA

/// Streaming SHA-256 through OpenSSL's EVP interface, which uses the CPU's SHA extensions.
public final class SHA256Hasher {
    private let context: OpaquePointer

    public init() {
        guard let ctx = EVP_MD_CTX_new() else { fatalError("OpenSSL could not allocate a digest context") }
        context = ctx
        EVP_DigestInit_ex(context, EVP_sha256(), nil)
    }

    deinit { EVP_MD_CTX_free(context) }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        EVP_DigestUpdate(context, base, bytes.count)
    }

    public func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The digest of everything updated so far; the hasher is then reset for reuse.
    public func finalize() -> BlobID {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &digest, &length)
        EVP_DigestInit_ex(context, EVP_sha256(), nil)
        return BlobID(digest: digest)
    }

    public static func hash(_ bytes: [UInt8]) -> BlobID {
        bytes.withUnsafeBytes { hash($0) }
    }

    public static func hash(_ bytes: UnsafeRawBufferPointer) -> BlobID {
        let h = SHA256Hasher()
        h.update(bytes)
        return h.finalize()
    }

    /// Hashes a file by streaming it in chunks: memory does not grow with its size.
    public static func hash(fileAt path: String, chunkSize: Int = BlobStore.chunkSize) throws -> (BlobID, Int64) {
        let hasher = SHA256Hasher()
        var total: Int64 = 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        try FileDescriptor.with(path, O_RDONLY) { fd in
            while true {
                let n = try fd.read(into: buffer)
                if n == 0 { break }
                hasher.update(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
                total += Int64(n)
            }
        }
        return (hasher.finalize(), total)
    }
}

/// Cryptographically random bytes from OpenSSL (tokens, staging names).
public enum SecureRandom {
    public static func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let ok = out.withUnsafeMutableBytes { RAND_bytes($0.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(count)) }
        precondition(ok == 1, "OpenSSL's random generator failed")
        return out
    }

    public static func hex(_ count: Int) -> String {
        bytes(count).map { b in
            let s = String(b, radix: 16)
            return b < 16 ? "0" + s : s
        }.joined()
    }
}
