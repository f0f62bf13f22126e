import BlobStore
import MediaTypes
import ReceiptWire
#if canImport(Glibc)
import Glibc
#endif

/// Uploads whose bytes are recognizably not of their declared media type (`MediaType.contradicts`:
/// another type's magic bytes, or text such as SVG declared as an image) are refused with 415: the
/// type of a web upload's file, the `Content-Type` of `PUT /v1/blobs/{sha256}` (none, or
/// application/octet-stream, declares nothing), and the type a push gives each attachment whose
/// blob the server holds (a bundle's blobs are declared by the push that follows them). Bytes of no
/// known type are not refused: a vault keeps a damaged scan under the type its name gave it, and
/// refusing that push would stop the vault's sync for good.
enum DeclaredTypes {
    /// Enough for every signature of the table.
    static let headSize = 64

    static func check(_ head: [UInt8], declared: String, what: String) throws {
        try head.withUnsafeBytes { bytes in
            guard !MediaType.contradicts(head: bytes, declared: declared) else {
                throw ServerError(.unsupportedType, "\(what) is declared \(MediaType.essence(declared)) but its bytes are "
                                  + "\(MediaType.describe(head: bytes)): it was refused")
            }
        }
    }

    /// Every attachment of the push whose blob is here, against the type the push declares for it
    /// (one whose blob is not here is refused by the push itself).
    static func check(_ push: WirePushRequest, store: BlobStore) throws {
        for record in push.records {
            for attachment in record.receipt?.attachments ?? [] {
                guard let id = BlobID(hex: attachment.sha256), let head = try? head(of: id, in: store) else { continue }
                try check(head, declared: attachment.mediaType,
                          what: "the attachment \(attachment.filename) of receipt \(record.id)")
            }
        }
    }

    /// The first bytes of a blob the server holds (it keeps original bytes).
    static func head(of id: BlobID, in store: BlobStore) throws -> [UInt8] {
        var head = [UInt8](repeating: 0, count: headSize)
        let count = try FileDescriptor.with(store.path(for: id), O_RDONLY) { fd in
            try head.withUnsafeMutableBytes { try fd.readFully(into: $0) }
        }
        return Array(head[..<count])
    }
}

/// The first bytes of a body as it streams by.
struct HeadBytes {
    private(set) var bytes: [UInt8] = []

    mutating func take(_ piece: UnsafeRawBufferPointer) {
        let wanted = DeclaredTypes.headSize - bytes.count
        if wanted > 0 { bytes += piece.prefix(wanted) }
    }
}
