import Foundation

/// What extracting one file gave.
public enum Extraction: Sendable, Equatable {
    /// The file's text (possibly empty: a format that holds none, or a blank image).
    case text(String)
    /// The tool failed on this file (crash, hang, refusal): recorded, never retried until `index --rebuild`.
    case failed(String)
    /// The tool this file needs is not installed: left pending, and the user is told which Debian package.
    case unavailable(tool: String, package: String)
}

/// Extracts the text of one file through child processes: plain text as is; PDFs through poppler's
/// `pdftotext`, and pages with no text layer through `pdftoppm` and Tesseract; images through
/// Tesseract. Every tool runs under `ToolLimits` (see `ToolRun`). Stateless and `Sendable`: run one
/// per core.
public struct TextExtractor: Sendable {
    /// Stored with every extracted text: a new version (better tools or options) makes `index --rebuild`
    /// worth running. Bump it when the output for a given file would change.
    /// 2: images (and scanned PDF pages) read as one block of text (`--psm 6`), as a receipt is printed:
    /// on SROIE's scans 000-299 it reads 76.7 % of the words where Tesseract's page layout read 70.8 %, in
    /// the same time (docs/BENCHMARKS.md, "Reading receipts").
    public static let version = "2"
    /// Every version `receipt` ever wrote, oldest first: a server keeps texts of these (a member on an
    /// older release still shares its texts).
    public static let versions = ["1", "2"]
    /// Text kept of one file (the rest is cut: a receipt's words are at its start).
    public static let maxTextBytes = 1 << 20
    /// Pages of one PDF rendered for OCR, at most (each runs under the time limit).
    public static let maxOCRPages = 50

    public let tools: ExtractorTools

    public init(tools: ExtractorTools) { self.tools = tools }

    /// True when the text of this media type comes from a tool (a child process), not from the bytes as they are.
    /// Whether any extractor reads files of this media type (a file of another type has no text to
    /// find, and its bytes need not be read for it).
    public static func reads(mediaType: String) -> Bool {
        if case .none = TextKind(mediaType: mediaType) { return false }
        return true
    }

    public static func needsTool(mediaType: String) -> Bool {
        switch TextKind(mediaType: mediaType) {
        case .pdf, .image, .heic: return true
        case .plain, .none: return false
        }
    }

    /// The text of `file` (whose bytes the caller verified), of media type `mediaType`. `scratch` is an
    /// empty folder the extractor may fill; the caller removes it.
    public func extract(file: String, mediaType: String, scratch: String) -> Extraction {
        switch TextKind(mediaType: mediaType) {
        case .plain: return .text(Self.readText(file))
        case .pdf: return extractPDF(file, scratch: scratch)
        case .image: return ocr(file, scratch: scratch, name: "image")
        case .heic: return .unavailable(tool: "a HEIC decoder", package: "none: convert HEIC photos to JPEG to make them searchable")
        case .none: return .text("")
        }
    }

    func extractPDF(_ file: String, scratch: String) -> Extraction {
        guard let pdftotext = tools.pdftotext else { return .unavailable(tool: "pdftotext", package: "poppler-utils") }
        let out = scratch + "/text.txt"
        let run = ToolRun.run(pdftotext, ["-enc", "UTF-8", file, out], in: scratch, limits: tools.limits,
                              environment: tools.environment)
        guard run.succeeded else { return .failed("pdftotext " + run.reason) }
        // pdftotext ends every page with a form feed.
        var pages = Self.readText(out, trimmed: false).components(separatedBy: "\u{0C}")
        if pages.last?.isEmpty == true { pages.removeLast() }
        let blank = pages.indices.filter { !pages[$0].contains(where: { $0.isLetter || $0.isNumber }) }
        guard !blank.isEmpty else { return .text(Self.tidy(pages.joined(separator: "\n"))) }
        guard let pdftoppm = tools.pdftoppm else { return .unavailable(tool: "pdftoppm", package: "poppler-utils") }
        for index in blank.prefix(Self.maxOCRPages) {
            let base = "page-\(index + 1)"
            let render = ToolRun.run(pdftoppm, ["-r", "300", "-gray", "-png", "-f", "\(index + 1)", "-l", "\(index + 1)",
                                                "-singlefile", file, scratch + "/" + base],
                                     in: scratch, limits: tools.limits, environment: tools.environment)
            guard render.succeeded else { return .failed("pdftoppm (page \(index + 1)) " + render.reason) }
            switch ocr(scratch + "/" + base + ".png", scratch: scratch, name: base) {
            case .text(let text): pages[index] = text
            case let other: return other
            }
            try? FileManager.default.removeItem(atPath: scratch + "/" + base + ".png")
        }
        return .text(Self.tidy(pages.joined(separator: "\n")))
    }

    func ocr(_ image: String, scratch: String, name: String) -> Extraction {
        guard let tesseract = tools.tesseract else { return .unavailable(tool: "tesseract", package: "tesseract-ocr") }
        guard !tools.languages.isEmpty else {
            return .unavailable(tool: "Tesseract's language data", package: "tesseract-ocr-eng")
        }
        let base = scratch + "/" + name + "-ocr"
        // A receipt is one column of lines: read as one block (`--psm 6`), a label and its amount stay on one
        // line, where the page layout analysis (the default) splits them into columns read apart.
        let run = ToolRun.run(tesseract, [image, base, "-l", tools.languages.joined(separator: "+"), "--psm", "6"], in: scratch,
                              limits: tools.limits, environment: tools.environment)
        guard run.succeeded else { return .failed("tesseract " + run.reason) }
        return .text(Self.readText(base + ".txt"))
    }

    /// A file's first `maxTextBytes` as text (invalid UTF-8 replaced).
    static func readText(_ path: String, trimmed: Bool = true) -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else { return "" }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: maxTextBytes)) ?? nil
        let text = String(decoding: data ?? Data(), as: UTF8.self)
        return trimmed ? text.trimmingCharacters(in: .whitespacesAndNewlines) : text
    }

    static func tidy(_ text: String) -> String {
        let text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return text.utf8.count <= maxTextBytes ? text : String(decoding: text.utf8.prefix(maxTextBytes), as: UTF8.self)
    }
}

/// Which way a media type's text is read.
enum TextKind {
    case plain, pdf, image, heic, none

    init(mediaType: String) {
        switch mediaType {
        case "application/pdf": self = .pdf
        case "image/heic": self = .heic
        case "application/json", "application/xml": self = .plain
        case let t where t.hasPrefix("text/"): self = .plain
        case "image/jpeg", "image/png", "image/tiff", "image/gif", "image/webp", "image/bmp": self = .image
        default: self = .none
        }
    }
}

/// The tools found on this machine and how to run them.
public struct ExtractorTools: Sendable {
    public var pdftotext: String?
    public var pdftoppm: String?
    public var tesseract: String?
    /// Tesseract languages used (`-l eng+deu`): the ones asked for, else every one installed.
    public var languages: [String]
    public var limits: ToolLimits
    /// The children's environment (OMP_THREAD_LIMIT and LC_ALL are set on top of it).
    public var environment: [String: String]

    public init(pdftotext: String?, pdftoppm: String?, tesseract: String?, languages: [String],
                limits: ToolLimits = ToolLimits(), environment: [String: String] = [:]) {
        self.pdftotext = pdftotext
        self.pdftoppm = pdftoppm
        self.tesseract = tesseract
        self.languages = languages
        self.limits = limits
        self.environment = environment
    }

    /// The tools on `searchPath` (a $PATH value). `languages` nil: every language Tesseract has
    /// installed (but `osd`, which is not a language). Throws naming a requested language that is not installed.
    public static func locate(searchPath: String?, environment: [String: String] = [:], languages: [String]? = nil,
                              limits: ToolLimits = ToolLimits()) throws -> ExtractorTools {
        let tesseract = ToolRun.locate("tesseract", path: searchPath)
        let installed = tesseract.map { installedLanguages($0, environment: environment) } ?? []
        var chosen = installed
        if let languages {
            if let missing = languages.first(where: { !installed.contains($0) }) {
                throw ExtractorSetupError(message: "the Tesseract language '\(missing)' is not installed "
                    + "(Debian package tesseract-ocr-\(missing)); installed: \(installed.joined(separator: ", "))")
            }
            chosen = languages
        }
        return ExtractorTools(pdftotext: ToolRun.locate("pdftotext", path: searchPath),
                              pdftoppm: ToolRun.locate("pdftoppm", path: searchPath),
                              tesseract: tesseract, languages: chosen, limits: limits, environment: environment)
    }

    /// `tesseract --list-langs`, without `osd` (orientation detection) and `equ` (equations).
    static func installedLanguages(_ tesseract: String, environment: [String: String]) -> [String] {
        guard let scratch = try? Scratch() else { return [] }
        let out = scratch.path + "/langs.txt"
        let run = ToolRun.run(tesseract, ["--list-langs"], in: scratch.path, stdoutPath: out,
                              limits: ToolLimits(seconds: 30), environment: environment)
        guard run.succeeded else { return [] }
        return TextExtractor.readText(out).split(whereSeparator: \.isNewline).dropFirst()
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && $0 != "osd" && $0 != "equ" }
    }
}

public struct ExtractorSetupError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public var description: String { message }
}

/// A private temporary folder (mode 0700), removed with everything in it when released.
public final class Scratch: Sendable {
    public let path: String

    public init(parent: String = NSTemporaryDirectory()) throws {
        var template = Array((parent.hasSuffix("/") ? parent : parent + "/").utf8CString.dropLast())
            + Array("receipt-text-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ $0.baseAddress.flatMap { mkdtemp($0) } }) else {
            throw ExtractorSetupError(message: "cannot create a temporary folder in \(parent): \(String(cString: strerror(errno)))")
        }
        path = String(cString: made)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
