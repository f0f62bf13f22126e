import BlobStore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where a thumbnail tool runs: a private folder (0700) made for the run under the system's temporary
/// folder, outside the data folder, holding an ImageMagick policy of its own and the work folder,
/// removed with the object (so a stopped server leaves none behind). ImageMagick reads that policy (`MAGICK_CONFIGURE_PATH`): every coder refused
/// but the raster ones thumbnails are made from, no delegate, no filter, and no file but those of the
/// work folders — so no SVG, MVG, MSL, TEXT, URL or `@file`, and no path to the blobs of the server.
final class ThumbnailSandbox: Sendable {
    let root: String

    /// The ImageMagick coders that read a thumbnail's source, by the media type its bytes start with.
    static let coders: [String: String] = [
        "image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WEBP", "image/tiff": "TIFF",
    ]

    /// nil when no private folder can be made (then every thumbnail is the placeholder).
    init?() {
        var template = Array(FileSystem.join(Self.temporaryFolder(), "receipt-thumbs-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { return nil }
        root = String(cString: made)
        let policy = FileSystem.join(root, "policy.xml")
        do {
            try FileDescriptor.with(policy, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode: 0o600) { fd in
                try fd.write(Array(Self.policy(allowing: root).utf8))
            }
        } catch {
            try? FileManager.default.removeItem(atPath: root)
            return nil
        }
    }

    deinit { remove() }

    func remove() { try? FileManager.default.removeItem(atPath: root) }

    /// A new empty work folder (0700), nil when it cannot be made.
    func newWork() -> String? {
        let work = FileSystem.join(root, "work-" + SecureRandom.hex(8))
        return (try? FileSystem.makeDirectories(work, mode: 0o700)) == nil ? nil : work
    }

    /// The tools' environment: this policy, temporary files in the work folder, no home of the server's.
    func environment(work: String) -> [String: String] {
        ["MAGICK_CONFIGURE_PATH": root, "MAGICK_TEMPORARY_PATH": work, "TMPDIR": work, "HOME": work,
         "XDG_CONFIG_HOME": work]
    }

    /// The policy's path rules are globs matched against the names the tool opens: a folder name
    /// with characters that are glob or XML syntax is not used.
    static func temporaryFolder() -> String {
        let system = FileManager.default.temporaryDirectory.path
        let plain = system.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "/._-".contains($0)) }
        return plain && system.hasPrefix("/") ? system : "/tmp"
    }

    /// Rules are matched in order, the last match deciding.
    static func policy(allowing root: String) -> String {
        let coders = Self.coders.values.sorted().map { #"  <policy domain="coder" rights="read" pattern="\#($0)"/>"# }
        return """
            <policymap>
              <policy domain="delegate" rights="none" pattern="*"/>
              <policy domain="filter" rights="none" pattern="*"/>
              <policy domain="coder" rights="none" pattern="*"/>
            \(coders.joined(separator: "\n"))
              <policy domain="coder" rights="read|write" pattern="PNG"/>
              <policy domain="path" rights="none" pattern="*"/>
              <policy domain="path" rights="read|write" pattern="\(root)/work-*"/>
              <policy domain="path" rights="none" pattern="*..*"/>
              <policy domain="path" rights="none" pattern="@*"/>
            </policymap>

            """
    }
}
