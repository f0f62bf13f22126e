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
    private var running: [BlobID: Task<Thumbnail, Never>] = [:]
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
    }

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

    /// The thumbnail of `blob` (an attachment of type `mediaType`), made now if it was not yet.
    func thumbnail(_ blob: BlobID, mediaType: String) async -> Thumbnail {
        let png = path(blob, ".png"), failed = path(blob, ".failed")
        if FileManager.default.fileExists(atPath: png) { return .png(path: png) }
        if FileManager.default.fileExists(atPath: failed) { return .placeholder }
        if let task = running[blob] { return await task.value }
        let task = Task.detached { [store] in
            await self.acquire()
            let made = await Self.make(blob, mediaType: mediaType, store: store, png: png, failed: failed)
            await self.release()
            return made
        }
        running[blob] = task
        let result = await task.value
        running[blob] = nil
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
    static func make(_ blob: BlobID, mediaType: String, store: BlobStore, png: String, failed: String) async -> Thumbnail {
        guard let sandbox = ThumbnailSandbox(), let work = sandbox.newWork(),
              (try? FileSystem.makeDirectories(FileSystem.parentPath(png), mode: 0o700)) != nil else { return .placeholder }
        defer { sandbox.remove() }
        let source = FileSystem.join(work, "source")
        let output = FileSystem.join(work, "thumb.png")
        var outcome: ToolOutcome?
        if copyOriginal(blob, store: store, to: source),
           let (tool, arguments) = command(source: source, declared: mediaType, output: output) {
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
    static func command(source: String, declared: String, output: String) -> (tool: String, arguments: [String])? {
        var head = [UInt8](repeating: 0, count: 64)
        guard let count = try? FileDescriptor.with(source, O_RDONLY, { fd in try head.withUnsafeMutableBytes { try fd.readFully(into: $0) } }),
              let type = head[..<count].withUnsafeBytes({ MediaType.sniff($0) }), type == MediaType.essence(declared)
        else { return nil }
        if type == "application/pdf" {
            return ("/usr/bin/pdftoppm", ["-png", "-singlefile", "-f", "1", "-l", "1", "-scale-to", "\(size)", source,
                                          String(output.dropLast(".png".count))])
        }
        guard let coder = ThumbnailSandbox.coders[type] else { return nil }
        // `[0]`: the first frame of an animation; `-thumbnail` also drops the metadata.
        return ("/usr/bin/convert", ["-limit", "memory", "256MiB", "-limit", "time", "\(limits.seconds)",
                                     "\(coder.lowercased()):\(source)[0]", "-auto-orient", "-thumbnail", "\(size)x\(size)>",
                                     "png:" + output])
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
                    environment: [String: String]) async -> ToolOutcome {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: ToolRun.run(tool, arguments, in: directory, limits: limits,
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
