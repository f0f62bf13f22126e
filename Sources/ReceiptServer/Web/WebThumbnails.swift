import BlobStore
import Foundation
import ReceiptText
#if canImport(Glibc)
import Glibc
#endif

/// The list's thumbnails: made once per blob by a maintained tool run as a child process under a
/// time and memory limit (ImageMagick's `convert` for images, poppler's `pdftoppm` for a PDF's
/// first page), then kept by the blob's address under `DATA/thumbs/` (files 0600). A blob no tool
/// can render (a damaged image, an unknown type, a tool that times out) gets the placeholder, and a
/// marker so it is not tried again; the thumbnail route never answers an error for it.
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
    static let imageTypes: Set<String> = WebFiles.inlineImageTypes.union(["image/heic", "image/heif", "image/tiff", "image/bmp"])

    enum Thumbnail: Sendable, Equatable {
        case png(path: String)
        case placeholder
    }

    init(dataPath: String, store: BlobStore) {
        folder = FileSystem.join(dataPath, "thumbs")
        self.store = store
    }

    /// The thumbnail of `blob` (an attachment of type `mediaType`), made now if it was not yet.
    func thumbnail(_ blob: BlobID, mediaType: String) async -> Thumbnail {
        let png = path(blob, ".png"), failed = path(blob, ".failed")
        if FileManager.default.fileExists(atPath: png) { return .png(path: png) }
        if FileManager.default.fileExists(atPath: failed) { return .placeholder }
        if let task = running[blob] { return await task.value }
        let task = Task.detached { [folder, store] in
            await self.acquire()
            let made = await Self.make(blob, mediaType: mediaType, store: store, folder: folder, png: png, failed: failed)
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

    /// Copies the blob's original bytes into a private work folder, runs the tool there, and moves
    /// its output into place (a rename: a reader sees no thumbnail or a whole one).
    static func make(_ blob: BlobID, mediaType: String, store: BlobStore, folder: String, png: String,
                     failed: String) async -> Thumbnail {
        let work = FileSystem.join(folder, "work-" + SecureRandom.hex(8))
        defer { try? FileManager.default.removeItem(atPath: work) }
        do {
            try FileSystem.makeDirectories(FileSystem.join(folder, blob.fanOut), mode: 0o700)
            try FileSystem.makeDirectories(work, mode: 0o700)
        } catch {
            return .placeholder
        }
        let source = FileSystem.join(work, "source")
        let output = FileSystem.join(work, "thumb.png")
        var outcome: ToolOutcome?
        if imageTypes.contains(mediaType) || mediaType == "application/pdf", copyOriginal(blob, store: store, to: source) {
            let (tool, arguments): (String, [String]) = mediaType == "application/pdf"
                ? ("/usr/bin/pdftoppm", ["-png", "-singlefile", "-f", "1", "-l", "1", "-scale-to", "\(size)", source,
                                         FileSystem.join(work, "thumb")])
                // `[0]`: the first frame of an animation; `-thumbnail` also drops the metadata.
                : ("/usr/bin/convert", ["-limit", "memory", "256MiB", "-limit", "time", "\(limits.seconds)",
                                        source + "[0]", "-auto-orient", "-thumbnail", "\(size)x\(size)>", "png:" + output])
            outcome = await run(tool, arguments, in: work)
        }
        if outcome?.succeeded == true, chmod(output, 0o600) == 0, rename(output, png) == 0 {
            return .png(path: png)
        }
        // Remembered, so a damaged file costs one run of the tool, not one per page view.
        let marker = Glibc.open(failed, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        if marker >= 0 { Glibc.close(marker) }
        return .placeholder
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
    static func run(_ tool: String, _ arguments: [String], in directory: String) async -> ToolOutcome {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: ToolRun.run(tool, arguments, in: directory, limits: limits))
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
