import CLZMA

public struct XZError: Error, CustomStringConvertible, Sendable {
    public let code: UInt32
    public let context: String
    public var description: String { "xz \(context) failed (lzma error \(code))" }
}

/// Streaming xz (liblzma) in either direction. Output is delivered chunk by chunk to a sink, so
/// memory stays bounded by the chunk size and the coder's own state.
public final class XZStream {
    public enum Direction { case compress(preset: UInt32), decompress }

    private var stream = lzma_stream()
    private var output: UnsafeMutableRawBufferPointer
    private let label: String

    public init(_ direction: Direction, outputChunk: Int = 1 << 20) throws {
        output = .allocate(byteCount: outputChunk, alignment: 16)
        let ret: lzma_ret
        switch direction {
        case .compress(let preset):
            label = "compression"
            ret = lzma_easy_encoder(&stream, preset, LZMA_CHECK_CRC64)
        case .decompress:
            label = "decompression"
            ret = lzma_stream_decoder(&stream, CLZMA_MEMLIMIT_UNLIMITED, 0)
        }
        if ret != LZMA_OK {
            output.deallocate()
            throw XZError(code: ret.rawValue, context: label)
        }
    }

    deinit {
        lzma_end(&stream)
        output.deallocate()
    }

    /// Feeds `input`; calls `sink` with every piece of output produced.
    public func process(_ input: UnsafeRawBufferPointer,
                        sink: (UnsafeRawBufferPointer) throws -> Void) throws {
        try run(input, action: LZMA_RUN, sink: sink)
    }

    /// Flushes the end of the stream. For a decoder, throws if the stream was incomplete.
    public func finish(sink: (UnsafeRawBufferPointer) throws -> Void) throws {
        try run(UnsafeRawBufferPointer(start: nil, count: 0), action: LZMA_FINISH, sink: sink)
    }

    private func run(_ input: UnsafeRawBufferPointer, action: lzma_action,
                     sink: (UnsafeRawBufferPointer) throws -> Void) throws {
        stream.next_in = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
        stream.avail_in = input.count
        while true {
            stream.next_out = output.baseAddress!.assumingMemoryBound(to: UInt8.self)
            stream.avail_out = output.count
            let ret = lzma_code(&stream, action)
            let produced = output.count - stream.avail_out
            if produced > 0 { try sink(UnsafeRawBufferPointer(rebasing: output[..<produced])) }
            if ret == LZMA_STREAM_END { return }
            if ret != LZMA_OK && ret != LZMA_BUF_ERROR { throw XZError(code: ret.rawValue, context: label) }
            if ret == LZMA_BUF_ERROR && action == LZMA_FINISH {
                throw XZError(code: ret.rawValue, context: label + " (truncated stream)")
            }
            if action == LZMA_RUN && stream.avail_in == 0 && stream.avail_out > 0 { return }
        }
    }

    /// The magic bytes every xz stream starts with.
    public static let magic: [UInt8] = [0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00]
}
