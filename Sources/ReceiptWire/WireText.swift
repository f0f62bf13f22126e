/// Extracted text through sync (docs/PROTOCOL.md, "Extracted text"): what a member's extractor read
/// of a blob, keyed like the blob by its address plus the extractor's version, so a household
/// extracts (and OCRs) each blob once.

/// `PUT /v1/text/{sha256}/{version}` body, and one entry of a fetch answer: the text, or why the
/// extractor failed (exactly one of the two).
public struct WireText: Codable, Sendable, Equatable {
    public var sha256: String?
    public var text: String?
    public var failed: String?
    public init(sha256: String? = nil, text: String?, failed: String?) {
        self.sha256 = sha256
        self.text = text
        self.failed = failed
    }

    /// Most bytes of a text body.
    public static let maxBytes = 4 << 20
    /// Most characters of a failure reason.
    public static let maxFailureLength = 4096

    /// Why the server refuses this body, or nil.
    public var validationError: String? {
        switch (text, failed) {
        case (let text?, nil):
            if text.utf8.contains(0) { return "the text contains a NUL byte" }
        case (nil, let reason?):
            if reason.utf8.count > Self.maxFailureLength { return "the failure reason is longer than \(Self.maxFailureLength) bytes" }
            if reason.utf8.contains(0) { return "the failure reason contains a NUL byte" }
        default:
            return "give exactly one of \"text\" and \"failed\""
        }
        return nil
    }
}

/// `POST /v1/text/want` and `POST /v1/text/fetch` body: blobs and the extractor version asked about.
public struct WireTextRequest: Codable, Sendable, Equatable {
    public var version: String
    public var blobs: [String]
    public init(version: String, blobs: [String]) {
        self.version = version
        self.blobs = blobs
    }

    /// Most addresses one text request may carry.
    public static let maxBlobs = 1000
}

/// `POST /v1/text/fetch` answer: the texts the server has of the blobs asked that the caller can read,
/// in the order asked; `more` when the answer stopped early (at about 16 MiB): ask again for the
/// addresses after the last one answered.
public struct WireTextFetchResponse: Codable, Sendable, Equatable {
    public var texts: [WireText]
    public var more: Bool
    public init(texts: [WireText], more: Bool) {
        self.texts = texts
        self.more = more
    }
}

/// `POST /v1/text/put` body (revision 5): texts of one extractor version, each with its `sha256`.
public struct WireTextPut: Codable, Sendable, Equatable {
    public var version: String
    public var texts: [WireText]
    public init(version: String, texts: [WireText]) {
        self.version = version
        self.texts = texts
    }

    /// Most texts one upload may carry.
    public static let maxTexts = 256
    /// Most bytes of text (and failure reasons) one upload carries, unless it carries one text only
    /// (up to `WireText.maxBytes`): a batch stays well under the body limits of the server and of
    /// proxies in front of it.
    public static let maxBatchBytes = 1 << 20

    /// The bytes an entry counts against `maxBatchBytes`.
    public static func weight(_ text: WireText) -> Int {
        (text.text?.utf8.count ?? 0) + (text.failed?.utf8.count ?? 0)
    }
}

/// `POST /v1/text/put` answer: the addresses whose text was not kept because the caller cannot read a
/// zone referencing the blob (`PUT /v1/text/…` answers those 404). Every other text was kept, or the
/// server had one of that blob and version already (the first stays).
public struct WireTextPutResponse: Codable, Sendable, Equatable {
    public var refused: [String]
    public init(refused: [String]) { self.refused = refused }
}

extension WireProtocol {
    /// The request and response header carrying a peer's protocol revision.
    public static let revisionHeader = "Receipt-Revision"
    /// The oldest client revision this server serves; a client that sends no revision header is
    /// revision 2, the last before the header.
    public static let minimumClientRevision = 2
    /// The first revision whose server keeps extracted text (`/v1/text`).
    public static let textRevision = 3
    /// The first revision whose server takes many texts in one upload (`POST /v1/text/put`).
    public static let textPutRevision = 5
}
