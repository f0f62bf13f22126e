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

    static func sniff(_ b: UnsafeRawBufferPointer) -> String? {
        func starts(_ magic: [UInt8], at offset: Int = 0) -> Bool {
            guard b.count >= offset + magic.count else { return false }
            for (i, m) in magic.enumerated() where b[offset + i] != m { return false }
            return true
        }
        if starts(Array("%PDF-".utf8)) { return "application/pdf" }
        if starts([0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "image/png" }
        if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A]) { return "image/tiff" }
        if starts(Array("ftyp".utf8), at: 4) {
            for brand in ["heic", "heix", "hevc", "heim", "heis", "mif1", "msf1"] where starts(Array(brand.utf8), at: 8) {
                return "image/heic"
            }
        }
        if starts(Array("GIF8".utf8)) { return "image/gif" }
        if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) { return "image/webp" }
        return nil
    }

    /// Valid UTF-8 with no NUL in the sample (a multi-byte sequence cut at the end is allowed).
    static func isText(_ b: UnsafeRawBufferPointer) -> Bool {
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

    static func fileExtension(_ filename: String) -> String {
        guard filename.utf8.contains(UInt8(ascii: ".")) else { return "" }  // not Foundation's substring search
        return filename.split(separator: ".").last.map { $0.lowercased() } ?? ""
    }

    static let byExtension: [String: String] = [
        "pdf": "application/pdf", "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png",
        "heic": "image/heic", "heif": "image/heic", "tif": "image/tiff", "tiff": "image/tiff",
        "gif": "image/gif", "webp": "image/webp", "txt": "text/plain", "text": "text/plain",
        "csv": "text/csv", "json": "application/json", "html": "text/html", "htm": "text/html",
        "xml": "application/xml", "eml": "message/rfc822", "zip": "application/zip",
    ]
}
