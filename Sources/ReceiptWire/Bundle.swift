/// The byte format of a blob bundle: the body of `POST /v1/blobs/bundle` and of the answer to
/// `POST /v1/blobs/fetch` (docs/PROTOCOL.md). Blobs one after another, each a 40-byte header — the
/// 32 bytes of its SHA-256, then its length as 8 bytes big-endian — followed by that many bytes.
/// Many small blobs then cost one request, and the server one flush, instead of one each.
public enum WireBundle {
    public static let contentType = "application/vnd.receipt.bundle"
    public static let headerSize = 40
    /// Most blobs one bundle may carry (each staged file holds a descriptor until it is installed).
    public static let maxBlobs = 256
    /// The size a client fills a bundle up to (a larger blob travels in a bundle of its own).
    public static let targetBytes: Int64 = 32 << 20

    /// The header of one blob in a bundle.
    public static func header(sha256 digest: [UInt8], length: Int64) -> [UInt8] {
        precondition(digest.count == 32 && length >= 0)
        var out = digest
        out.reserveCapacity(headerSize)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: length >> Int64(shift))) }
        return out
    }

    /// Splits `items` (in order) into bundles of at most `maxBlobs` blobs and, unless a single blob is
    /// larger, at most `target` bytes.
    public static func split<T>(_ items: [T], target: Int64 = targetBytes, size: (T) -> Int64) -> [[T]] {
        var bundles: [[T]] = []
        var current: [T] = []
        var bytes: Int64 = 0
        for item in items {
            let n = max(0, size(item))
            if !current.isEmpty && (current.count == maxBlobs || bytes + n > target) {
                bundles.append(current)
                current = []
                bytes = 0
            }
            current.append(item)
            bytes += n
        }
        if !current.isEmpty { bundles.append(current) }
        return bundles
    }
}

/// The error a malformed bundle stream raises, as one sentence.
public struct WireBundleError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Reads a bundle as it arrives, in pieces of any size: reports each blob's header, its bytes (in
/// the pieces they arrived in) and its end. Holds at most one header in memory.
public struct WireBundleReader {
    public enum Event {
        case begin(sha256: [UInt8], length: Int64)
        case bytes(UnsafeRawBufferPointer)
        case end
    }

    private var header: [UInt8] = []
    /// Bytes of the current blob still to come; nil between blobs.
    private var remaining: Int64?

    public init() { header.reserveCapacity(WireBundle.headerSize) }

    /// Consumes `piece`, calling `handle` for what it completes. The byte ranges handed to `handle`
    /// are valid during the call only.
    public mutating func feed(_ piece: UnsafeRawBufferPointer, _ handle: (Event) throws -> Void) throws {
        var rest = piece[...]
        while !rest.isEmpty {
            if let left = remaining {
                let take = Int(min(left, Int64(rest.count)))
                if take > 0 {
                    try handle(.bytes(UnsafeRawBufferPointer(rebasing: rest.prefix(take))))
                    rest = rest.dropFirst(take)
                }
                remaining = left - Int64(take)
                if remaining == 0 {
                    remaining = nil
                    try handle(.end)
                }
                continue
            }
            let take = min(WireBundle.headerSize - header.count, rest.count)
            header.append(contentsOf: rest.prefix(take))
            rest = rest.dropFirst(take)
            guard header.count == WireBundle.headerSize else { continue }
            var length: Int64 = 0
            for byte in header[32...] { length = length << 8 | Int64(byte) }
            guard length >= 0 else { throw WireBundleError("a blob in the bundle announces an impossible length") }
            let digest = Array(header[..<32])
            header.removeAll(keepingCapacity: true)
            try handle(.begin(sha256: digest, length: length))
            if length == 0 {
                try handle(.end)
            } else {
                remaining = length
            }
        }
    }

    /// True between blobs: the stream may end here.
    public var atBoundary: Bool { remaining == nil && header.isEmpty }
}
