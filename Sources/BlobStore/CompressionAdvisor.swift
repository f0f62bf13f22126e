/// Decides, from the first chunk of a blob, whether xz is likely to save at least 10 %.
/// Running xz over already-compressed data costs ~7 MB/s for no gain, so the decision must be cheap:
/// magic bytes of compressed formats first, then the order-0 entropy of a sample.
public enum CompressionAdvisor {
    public static func worthCompressing(_ head: UnsafeRawBufferPointer) -> Bool {
        if head.count < 512 { return false }
        if isCompressedFormat(head) { return false }
        return entropyBitsPerByte(UnsafeRawBufferPointer(rebasing: head[..<min(head.count, 64 * 1024)])) < 7.0
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
        for byte in sample { counts[Int(byte)] += 1 }
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
