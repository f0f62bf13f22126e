import BlobStore
import Foundation
import Hummingbird
import NIOCore
import ReceiptWire

/// Serving an attachment's bytes to a browser: verified on the way (a corrupt blob ends the
/// response early, as in the sync API), with its media type and a file name that cannot break the
/// header. Only images and PDFs are shown inline; anything else (SVG, HTML ...) is a download.
enum WebFiles {
    static let inlineImageTypes: Set<String> = ["image/jpeg", "image/png", "image/gif", "image/webp"]
    static let inlineTypes = inlineImageTypes.union(["application/pdf"])

    static func send(_ attachment: WireAttachment, id: BlobID, store: BlobStore, download: Bool) -> Response {
        let size = attachment.size
        let inline = !download && inlineTypes.contains(attachment.mediaType)
        let body = ResponseBody(contentLength: Int(size)) { writer in
            var out = OutgoingPieces()
            try await out.append(id, size: size, from: store) { try await writer.write($0) }
            try await out.flush { try await writer.write($0) }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [
            .contentType: inline ? attachment.mediaType : "application/octet-stream",
            .contentDisposition: contentDisposition(attachment.filename, inline: inline),
            .xContentTypeOptions: "nosniff", .cacheControl: "private, no-store",
            .contentSecurityPolicy: inline && attachment.mediaType != "application/pdf" ? "default-src 'none'" : "sandbox",
        ], body: body)
    }

    /// `inline|attachment; filename="ASCII"; filename*=UTF-8''PERCENT-ENCODED` (RFC 6266): the
    /// ASCII name keeps letters, digits, `. _ -` and spaces; the encoded name keeps the rest.
    static func contentDisposition(_ name: String, inline: Bool) -> String {
        let plain = String(name.unicodeScalars.map { c -> Character in
            c.isASCII && (CharacterSet.alphanumerics.contains(c) || ". _-".unicodeScalars.contains(c)) ? Character(c) : "_"
        }).prefix(200)
        var attrChars = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)...Unicode.Scalar(127)))
        attrChars.insert(charactersIn: "!#$&+-.^_`|~")
        let encoded = name.addingPercentEncoding(withAllowedCharacters: attrChars) ?? "file"
        let kind = inline ? "inline" : "attachment"
        return "\(kind); filename=\"\(plain.isEmpty ? "file" : String(plain))\"; filename*=UTF-8''\(encoded)"
    }
}
