import BlobStore
import Foundation
import MediaTypes
import ReceiptText
#if canImport(Glibc)
import Glibc
#endif

/// The list's thumbnails: made once per blob by a maintained tool run as a child process under a
/// time and memory limit (ImageMagick's `convert` for images, poppler's `pdftoppm` for a PDF's
/// first page), then kept by the blob's address under `DATA/thumbs/` (files 0600). Only bytes that
/// start as their declared type says, and are PNG, JPEG, GIF, WebP, TIFF or PDF, are rendered, by
/// the coder of that type named explicitly (`png:`…), in a `ThumbnailSandbox`: ImageMagick never
/// picks a decoder from the content (an SVG would fetch any file it names). A blob no tool can render
/// (a damaged image, another type, a tool that times out) gets the placeholder, and a marker so it is
/// not tried again; the thumbnail route never answers an error for it.
actor WebThumbnails {
    let folder: String
    let store: BlobStore
    /// Generations under way: a page of 50 rows asking at once makes each thumbnail once.
    private var running: [String: Task<Thumbnail, Never>] = [:]
    /// Tools running now, at most one per core; the rest wait their turn.
    private var busy = 0
    private var queue: [CheckedContinuation<Void, Never>] = []
    static let parallel = max(1, ProcessInfo.processInfo.activeProcessorCount)

    static let size = 160
    static let limits = ToolLimits(seconds: 20, memoryBytes: 1 << 30)
    /// In `folder` once every thumbnail there was made by coder named: older ones may have been
    /// rendered from an SVG that pulled in another blob, so they are all removed once.
    static let madeByCoderMarker = ".made-by-named-coder"

    enum Thumbnail: Sendable, Equatable {
        case png(path: String)
        case placeholder
        case pages(Int)
    }

    /// The width of a PDF page shown on the receipt's page.
    static let pageSize = 1000

    init(dataPath: String, store: BlobStore) {
        folder = FileSystem.join(dataPath, "thumbs")
        self.store = store
        Self.forgetThumbnailsOfOlderServers(folder)
    }

    static func forgetThumbnailsOfOlderServers(_ folder: String) {
        let marker = FileSystem.join(folder, madeByCoderMarker)
        guard !FileSystem.exists(marker) else { return }
        for name in (try? FileSystem.contents(of: folder)) ?? [] {
            try? FileManager.default.removeItem(atPath: FileSystem.join(folder, name))
        }
        guard (try? FileSystem.makeDirectories(folder, mode: 0o700)) != nil else { return }
        let fd = Glibc.open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        if fd >= 0 { Glibc.close(fd) }
    }

    /// The thumbnail of `blob` (an attachment of type `mediaType`), made now if it was not yet; with
    /// `page`, that page of a PDF at `pageSize` (the receipt page's preview, pages on demand).
    func thumbnail(_ blob: BlobID, mediaType: String, page: Int? = nil) async -> Thumbnail {
        let suffix = page.map { ".p\($0)" } ?? ""
        let png = path(blob, suffix + ".png"), failed = path(blob, suffix + ".failed")
        return await once(blob.hex + suffix, done: { FileManager.default.fileExists(atPath: png) ? .png(path: png)
                                                       : FileManager.default.fileExists(atPath: failed) ? .placeholder : nil }) {
            [store] in await Self.make(blob, mediaType: mediaType, page: page, store: store, png: png, failed: failed)
        }
    }

    /// How many pages the PDF `blob` has (poppler's `pdfinfo`, once per blob, kept beside its
    /// thumbnail); nil when its bytes are no PDF the tool can read.
    func pageCount(_ blob: BlobID) async -> Int? {
        let pages = path(blob, ".pages")
        let made = await once(blob.hex + ".pages", done: { Self.keptPageCount(pages) }) { [store] in
            await Self.countPages(blob, store: store, into: pages)
            return Self.keptPageCount(pages) ?? .placeholder
        }
        if case .pages(let n) = made { return n }
        return nil
    }

    /// Removes every file kept for the blob `sha256` (`receipt server gc` took it): its thumbnail or
    /// its marker, and a PDF's page count and pages, which are never past that count.
    static func forget(_ sha256: String, dataPath: String) {
        let stem = FileSystem.join(FileSystem.join(FileSystem.join(dataPath, "thumbs"), String(sha256.prefix(2))), sha256)
        if case .pages(let count) = keptPageCount(stem + ".pages") {
            for page in 1...count {
                for suffix in [".png", ".failed"] { try? FileSystem.remove(stem + ".p\(page)" + suffix) }
            }
        }
        for suffix in [".png", ".failed", ".pages"] { try? FileSystem.remove(stem + suffix) }
    }

    /// The page count kept in the file `pages` (the placeholder for a PDF no tool could read), nil before it is counted.
    static func keptPageCount(_ pages: String) -> Thumbnail? {
        guard let text = try? String(contentsOfFile: pages, encoding: .utf8) else { return nil }
        return Int(text).map { .pages($0) } ?? .placeholder
    }

    /// The result kept on disk (`done`), else `make`'s, run once however many ask at the same time,
    /// and at most one per core.
    private func once(_ key: String, done: () -> Thumbnail?, make: @escaping @Sendable () async -> Thumbnail) async -> Thumbnail {
        if let made = done() { return made }
        if let task = running[key] { return await task.value }
        let task = Task.detached {
            await self.acquire()
            let made = await make()
            await self.release()
            return made
        }
        running[key] = task
        let result = await task.value
        running[key] = nil
        return result
    }

    private func acquire() async {
        if busy < Self.parallel {
            busy += 1
            return
        }
        await withCheckedContinuation { queue.append($0) }
    }

    /// Hands the slot to the next waiting generation, if any.
    private func release() {
        if queue.isEmpty { busy -= 1 } else { queue.removeFirst().resume() }
    }

    func path(_ blob: BlobID, _ suffix: String) -> String {
        FileSystem.join(FileSystem.join(folder, blob.fanOut), blob.hex + suffix)
    }

    /// Copies the blob's original bytes into a sandbox of its own (removed when done), runs the tool
    /// there, and moves its output into place (a rename: a reader sees no thumbnail or a whole one).
    static func make(_ blob: BlobID, mediaType: String, page: Int?, store: BlobStore, png: String, failed: String) async -> Thumbnail {
        guard let sandbox = ThumbnailSandbox(), let work = sandbox.newWork(),
              (try? FileSystem.makeDirectories(FileSystem.parentPath(png), mode: 0o700)) != nil else { return .placeholder }
        defer { sandbox.remove() }
        let source = FileSystem.join(work, "source")
        let output = FileSystem.join(work, "thumb.png")
        var outcome: ToolOutcome?
        if copyOriginal(blob, store: store, to: source),
           let (tool, arguments) = command(source: source, declared: mediaType, output: output, page: page) {
            outcome = await run(tool, arguments, in: work, environment: sandbox.environment(work: work))
        }
        if outcome?.succeeded == true, install(output, at: png) {
            return .png(path: png)
        }
        // Remembered, so a damaged file costs one run of the tool, not one per page view.
        let marker = Glibc.open(failed, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        if marker >= 0 { Glibc.close(marker) }
        return .placeholder
    }

    /// The tool rendering `source` to the PNG `output`, when its bytes start as its declared type says
    /// and that type is one thumbnails are made from; nil otherwise.
    static func command(source: String, declared: String, output: String, page: Int? = nil) -> (tool: String, arguments: [String])? {
        var head = [UInt8](repeating: 0, count: 64)
        guard let count = try? FileDescriptor.with(source, O_RDONLY, { fd in try head.withUnsafeMutableBytes { try fd.readFully(into: $0) } }),
              let type = head[..<count].withUnsafeBytes({ MediaType.sniff($0) }), type == MediaType.essence(declared)
        else { return nil }
        if type == "application/pdf" {
            let first = String(page ?? 1), scale = String(page == nil ? size : pageSize)
            return ("/usr/bin/pdftoppm", ["-png", "-singlefile", "-f", first, "-l", first, "-scale-to", scale, source,
                                          String(output.dropLast(".png".count))])
        }
        guard page == nil else { return nil }
        guard let coder = ThumbnailSandbox.coders[type] else { return nil }
        // `[0]`: the first frame of an animation; `-thumbnail` also drops the metadata.
        return ("/usr/bin/convert", ["-limit", "memory", "256MiB", "-limit", "time", "\(limits.seconds)",
                                     "\(coder.lowercased()):\(source)[0]", "-auto-orient", "-thumbnail", "\(size)x\(size)>",
                                     "png:" + output])
    }

    /// Runs `pdfinfo` on a copy of the blob in a sandbox and keeps its page count (or "unreadable")
    /// in the file `pages`.
    static func countPages(_ blob: BlobID, store: BlobStore, into pages: String) async {
        guard let sandbox = ThumbnailSandbox(), let work = sandbox.newWork(),
              (try? FileSystem.makeDirectories(FileSystem.parentPath(pages), mode: 0o700)) != nil else { return }
        defer { sandbox.remove() }
        let source = FileSystem.join(work, "source"), info = FileSystem.join(work, "info.txt")
        var count = "unreadable"
        if copyOriginal(blob, store: store, to: source),
           await run("/usr/bin/pdfinfo", [source], in: work, environment: sandbox.environment(work: work), stdoutPath: info).succeeded,
           let text = try? String(contentsOfFile: info, encoding: .utf8),
           let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Pages:") }),
           let n = Int(line.dropFirst("Pages:".count).trimmingCharacters(in: .whitespaces)), n > 0 {
            count = String(n)
        }
        let staging = FileSystem.join(work, "pages")
        if FileManager.default.createFile(atPath: staging, contents: Data(count.utf8)) { _ = install(staging, at: pages) }
    }

    /// Copies the tool's output next to `path` (the sandbox may be on another file system), then
    /// renames it into place, 0600.
    static func install(_ output: String, at path: String) -> Bool {
        guard let bytes = FileManager.default.contents(atPath: output), !bytes.isEmpty else { return false }
        let staging = path + "." + SecureRandom.hex(4) + ".tmp"
        do {
            try FileDescriptor.with(staging, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode: 0o600) { try $0.write(Array(bytes)) }
            try FileSystem.rename(staging, path)
            return true
        } catch {
            try? FileSystem.remove(staging)
            return false
        }
    }

    /// The blob's original bytes (it may be stored xz-compressed) in a new 0600 file.
    static func copyOriginal(_ blob: BlobID, store: BlobStore, to path: String) -> Bool {
        for encoding in [BlobEncoding.identity, .xz] {
            guard let out = try? FileDescriptor.open(path, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600) else { return false }
            defer { out.close() }
            // A failed copy removes its file, so the next encoding starts afresh.
            if (try? store.copy(blob, encoding: encoding, into: out, verify: true)) != nil { return true }
        }
        return false
    }

    /// ToolRun waits for its child: done on a thread of its own, not one of the server's.
    static func run(_ tool: String, _ arguments: [String], in directory: String,
                    environment: [String: String], stdoutPath: String? = nil) async -> ToolOutcome {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: ToolRun.run(tool, arguments, in: directory, stdoutPath: stdoutPath, limits: limits,
                                                           environment: environment))
            }
        }
    }

    /// Shown for a blob without a thumbnail: an SVG of fixed text (no user data in it).
    static let placeholderSVG = """
        <svg xmlns="http://www.w3.org/2000/svg" width="160" height="160" viewBox="0 0 160 160">\
        <rect width="160" height="160" fill="#ddd"/><text x="80" y="86" font-family="sans-serif" font-size="16" \
        text-anchor="middle" fill="#555">no preview</text></svg>
        """
}
