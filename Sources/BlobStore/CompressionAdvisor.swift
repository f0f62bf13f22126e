/// Decides whether xz is worth running over a blob. liblzma's fastest preset compresses text at
/// ~34 MB/s but crawls through random bytes (photos, the image streams inside PDFs) at ~7 MB/s for no
/// gain, so the decision must be cheap and made before xz runs: magic bytes of compressed formats
/// first, then the order-0 entropy of a sample of the head, then — for files that pass — an estimate
/// of the whole file's xz ratio from the entropy of each 64 KiB block (within ~0.05 of xz's real ratio
/// on the benchmark corpus), read from the page cache at memory speed.
public enum CompressionAdvisor {
    /// `auto` compresses when the estimated ratio is at most this: where xz saves a third or more,
    /// the bytes saved are worth the ~7 MB/s xz spends on the file's incompressible parts.
    public static let autoMaximumRatio = 0.65
    static let blockSize = 64 * 1024

    public static func worthCompressing(_ head: UnsafeRawBufferPointer) -> Bool {
        if head.count < 512 { return false }
        if isCompressedFormat(head) { return false }
        return entropyBitsPerByte(UnsafeRawBufferPointer(rebasing: head[..<min(head.count, 64 * 1024)])) < 7.0
    }

    /// Estimated xz size / original size: blocks of near-random bytes (> 7.5 bits/byte) count whole,
    /// others at 60 % of their order-0 entropy (LZMA's matches beat order-0 on structured text).
    public static func estimatedRatio(_ bytes: UnsafeRawBufferPointer) -> Double {
        guard bytes.count > 0 else { return 1 }
        var estimate = 0.0
        var start = 0
        while start < bytes.count {
            let block = UnsafeRawBufferPointer(rebasing: bytes[start..<min(start + blockSize, bytes.count)])
            let bits = entropyBitsPerByte(block)
            estimate += bits > 7.5 ? Double(block.count) : Double(block.count) * bits / 8 * 0.6
            start += blockSize
        }
        return estimate / Double(bytes.count)
    }

    /// `estimatedRatio` of a file whose first `headCount` bytes are already in `chunk`, from them and from
    /// at most `samples` more chunks spread evenly over the rest (read through `chunk` at their offsets;
    /// the file's offset is left where it was). Reading the whole file for the estimate was a fifth of
    /// a 1 GiB file's import. A wrong estimate costs time, never bytes: a blob xz does not shrink by
    /// 10 % is stored as it is (`BlobStore.stage`).
    static func estimatedRatio(of source: FileDescriptor, headCount: Int,
                               in chunk: UnsafeMutableRawBufferPointer, samples: Int = 16) throws -> Double {
        var weighted = estimatedRatio(UnsafeRawBufferPointer(rebasing: chunk[..<headCount])) * Double(headCount)
        var total = Double(headCount)
        let rest = try source.stat().size - Int64(headCount)
        if headCount == chunk.count, rest > 0 {
            let count = Int64(min(samples, Int((rest + Int64(chunk.count) - 1) / Int64(chunk.count))))
            let step = max(Int64(chunk.count), rest / count)  // a file of up to 17 chunks: each byte once
            for i in 0..<count {
                let n = try source.read(into: chunk, at: Int64(headCount) + step * i)
                weighted += estimatedRatio(UnsafeRawBufferPointer(rebasing: chunk[..<n])) * Double(n)
                total += Double(n)
            }
        }
        return total > 0 ? weighted / total : 1
    }

    static func isCompressedFormat(_ b: UnsafeRawBufferPointer) -> Bool {
        func starts(_ magic: [UInt8], at offset: Int = 0) -> Bool {
            guard b.count >= offset + magic.count else { return false }
            for (i, m) in magic.enumerated() where b[offset + i] != m { return false }
            return true
        }
        return starts([0xFF, 0xD8, 0xFF])                       // JPEG
            || starts([0x89, 0x50, 0x4E, 0x47])                 // PNG
            || starts(Array("GIF8".utf8))
            || starts(Array("ftyp".utf8), at: 4)                // HEIC, MP4, MOV
            || starts([0x50, 0x4B, 0x03, 0x04])                 // ZIP, DOCX, XLSX
            || starts([0x1F, 0x8B])                             // gzip
            || starts(XZStream.magic)
            || starts([0x28, 0xB5, 0x2F, 0xFD])                 // zstd
            || starts(Array("BZh".utf8))
            || starts([0x37, 0x7A, 0xBC, 0xAF, 0x27, 0x1C])     // 7z
            || (starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8))
    }

    static func entropyBitsPerByte(_ sample: UnsafeRawBufferPointer) -> Double {
        var counts = [Int](repeating: 0, count: 256)
        counts.withUnsafeMutableBufferPointer { c in
            for byte in sample { c[Int(byte)] &+= 1 }
        }
        let n = Double(sample.count)
        var bits = 0.0
        for c in counts where c > 0 {
            let p = Double(c) / n
            bits -= p * log2(p)
        }
        return bits
    }
}

#if canImport(Glibc)
import Glibc
#endif
