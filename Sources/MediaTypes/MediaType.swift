/// Media types from file content, falling back to the extension: a scan saved without an
/// extension, or a PDF named `.jpg`, still gets the right type.
public enum MediaType {
    /// The type of a file from its first bytes (4 KiB is plenty) and its name. Binary formats are
    /// recognized by content; text content takes its kind from the extension (csv, json) or is
    /// text/plain; anything else falls back to the extension, then application/octet-stream.
    public static func of(head: UnsafeRawBufferPointer, filename: String) -> String {
        if let sniffed = sniff(head) { return sniffed }
        let known = byExtension[fileExtension(filename)]
        if head.count > 0 && isText(head) {
            if let known, known.hasPrefix("text/") || known == "application/json" || known == "application/xml" {
                return known
            }
            return "text/plain"
        }
        return known ?? "application/octet-stream"
    }

    /// The type whose signature the bytes start with (binary formats only).
    public static func sniff(_ b: UnsafeRawBufferPointer) -> String? {
        table.first { $0.signatures.contains { starts(b, with: $0) } }?.mediaType
    }

    /// Whether a file starting with `head` (its first 16 bytes suffice) is recognizably not of the
    /// `declared` type: it starts with another type's magic bytes, or it is text where a type the
    /// table knows by its magic bytes is declared (an SVG as image/png). Bytes of no known type
    /// contradict nothing: a damaged scan keeps the type its name gave it. application/octet-stream
    /// declares nothing.
    public static func contradicts(head: UnsafeRawBufferPointer, declared: String) -> Bool {
        let type = essence(declared)
        guard type != "application/octet-stream" else { return false }
        if let sniffed = sniff(head) { return sniffed != type }
        let binary = table.contains { $0.mediaType == type && !$0.signatures.isEmpty }
        return binary && head.count > 0 && isText(head)
    }

    /// What the bytes look like, for a refusal: "image/png", "text", "bytes of no known type".
    public static func describe(head: UnsafeRawBufferPointer) -> String {
        sniff(head) ?? (head.count > 0 && isText(head) ? "text" : "bytes of no known type")
    }

    /// The type without parameters, in lower case: `Image/PNG; x=y` is `image/png`.
    public static func essence(_ mediaType: String) -> String {
        let type = mediaType.prefix { $0 != ";" }
        guard let first = type.firstIndex(where: { !$0.isWhitespace }),
              let last = type.lastIndex(where: { !$0.isWhitespace }) else { return "" }
        return type[first...last].lowercased()
    }

    static func starts(_ b: UnsafeRawBufferPointer, with signature: Signature) -> Bool {
        signature.allSatisfy { offset, magic in
            guard b.count >= offset + magic.count else { return false }
            for (i, m) in magic.enumerated() where b[offset + i] != m { return false }
            return true
        }
    }

    /// Valid UTF-8 with no NUL in the sample (a multi-byte sequence cut at the end is allowed).
    static func isText(_ b: UnsafeRawBufferPointer) -> Bool {
        if isASCIIWithoutNUL(b) { return true }
        if b.contains(0) { return false }
        // Read in place (no copy, no String): text when the bytes are valid up to their last three,
        // where a sequence cut by the sample's end may stand.
        var parser = Unicode.UTF8.ForwardParser()
        var bytes = b.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &bytes) {
            case .valid(let scalar): offset += scalar.count
            case .emptyInput: return true
            case .error: return offset >= b.count - 3
            }
        }
    }

    /// True when every byte is 1–127: text, decided 8 bytes at a time. Most receipts a manifest names
    /// are plain ASCII, and the scalar-by-scalar UTF-8 parse below was 2 % of a 100,000-row import.
    static func isASCIIWithoutNUL(_ b: UnsafeRawBufferPointer) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        var i = 0
        while i + 8 <= b.count {
            let w = b.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            // A high bit set, or a zero byte (the classic "has a zero byte" test).
            if w & highs != 0 || (w &- ones) & ~w & highs != 0 { return false }
            i += 8
        }
        while i < b.count {
            if b[i] == 0 || b[i] >= 0x80 { return false }
            i += 1
        }
        return true
    }

    static func fileExtension(_ filename: String) -> String {
        guard filename.utf8.contains(UInt8(ascii: ".")) else { return "" }  // not Foundation's substring search
        return filename.split(separator: ".").last.map { $0.lowercased() } ?? ""
    }

    /// The extension a file of this type is given (without the dot), nil for a type not in the table.
    public static func fileExtension(for mediaType: String) -> String? {
        table.first { $0.mediaType == mediaType }?.extensions.first
    }

    /// The type the table gives a file name's extension, nil when it has none.
    public static func byFileName(_ filename: String) -> String? {
        byExtension[fileExtension(filename)]
    }

    static let byExtension: [String: String] = Dictionary(
        table.flatMap { entry in entry.extensions.map { ($0, entry.mediaType) } }, uniquingKeysWith: { first, _ in first })

    /// Bytes at an offset; a signature matches when all of its parts do.
    typealias Signature = [(offset: Int, bytes: [UInt8])]

    struct Entry: Sendable {
        let mediaType: String
        /// The first is the one files of this type are given.
        let extensions: [String]
        /// Any one identifies the type from a file's first bytes (none: known by extension only).
        let signatures: [Signature]
    }

    /// THE table of media types: each type with its extensions and the magic bytes it starts with.
    /// Sniffing, extension lookups and the extensions given to exported and recovered files all read it.
    static let table: [Entry] = [
        Entry(mediaType: "application/pdf", extensions: ["pdf"], signatures: [[(0, Array("%PDF-".utf8))]]),
        Entry(mediaType: "image/jpeg", extensions: ["jpg", "jpeg"], signatures: [[(0, [0xFF, 0xD8, 0xFF])]]),
        Entry(mediaType: "image/png", extensions: ["png"], signatures: [[(0, [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])]]),
        Entry(mediaType: "image/tiff", extensions: ["tiff", "tif"],
              signatures: [[(0, [0x49, 0x49, 0x2A, 0x00])], [(0, [0x4D, 0x4D, 0x00, 0x2A])]]),
        Entry(mediaType: "image/heic", extensions: ["heic", "heif"],
              signatures: ["heic", "heix", "hevc", "heim", "heis", "mif1", "msf1"].map { [(4, Array("ftyp".utf8)), (8, Array($0.utf8))] }),
        Entry(mediaType: "image/gif", extensions: ["gif"], signatures: [[(0, Array("GIF8".utf8))]]),
        Entry(mediaType: "image/webp", extensions: ["webp"], signatures: [[(0, Array("RIFF".utf8)), (8, Array("WEBP".utf8))]]),
        Entry(mediaType: "text/plain", extensions: ["txt", "text"], signatures: []),
        Entry(mediaType: "text/csv", extensions: ["csv"], signatures: []),
        Entry(mediaType: "application/json", extensions: ["json"], signatures: []),
        Entry(mediaType: "text/html", extensions: ["html", "htm"], signatures: []),
        Entry(mediaType: "application/xml", extensions: ["xml"], signatures: []),
        Entry(mediaType: "message/rfc822", extensions: ["eml"], signatures: []),
        Entry(mediaType: "application/zip", extensions: ["zip"], signatures: []),
    ]
}
