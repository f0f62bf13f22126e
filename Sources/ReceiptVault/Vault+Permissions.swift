import BlobStore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Private by default: a vault holds medical and financial records, so its folder is 0700 and its
/// files 0600 (as restic and GnuPG keep their stores). `fsck` reports what other users could read,
/// write or enter, and `--repair` takes those permissions away (the owner's stay as they are).
extension Vault {
    /// Folders and files of the vault (symbolic links are not followed) that give group or other any
    /// permission.
    public struct OpenPermissions: Sendable {
        public var folders: [String] = []
        public var files: [String] = []
        public var isEmpty: Bool { folders.isEmpty && files.isEmpty }
    }

    public static func openPermissions(vaultPath: String) -> OpenPermissions {
        var found = OpenPermissions()
        var pending = [vaultPath]
        while let folder = pending.popLast() {
            if let st = try? FileSystem.status(folder), st.mode & 0o077 != 0 { found.folders.append(folder) }
            for name in (try? FileSystem.contents(of: folder)) ?? [] {
                let path = FileSystem.join(folder, name)
                guard let st = try? FileSystem.status(path) else { continue }
                if st.isDirectory {
                    pending.append(path)
                } else if st.isRegular && st.mode & 0o077 != 0 {
                    found.files.append(path)
                }
            }
        }
        return found
    }

    /// Removes group and other permissions; returns the paths it could not change.
    static func tighten(_ paths: [String]) -> [String] {
        paths.filter { path in
            guard let st = try? FileSystem.status(path) else { return false }
            return chmod(path, st.mode & 0o700) != 0
        }
    }

    /// fsck's check: one problem for the folders and one for the files others can reach (naming
    /// the first few); the repair tightens them (`tighten`).
    static func checkPermissions(vaultPath: String, sink: FsckSink) {
        let open = openPermissions(vaultPath: vaultPath)
        for (paths, what) in [(open.folders, "folder(s)"), (open.files, "file(s)")] where !paths.isEmpty {
            let examples = paths.prefix(3).joined(separator: ", ") + (paths.count > 3 ? ", …" : "")
            let found = "\(paths.count) \(what) of the vault can be read by other users (\(examples))"
            sink.emit(FsckProblem(.permissions, path: paths[0], detail: found + ": run `receipt fsck --repair` to make them private (chmod go-rwx)",
                                  fix: .tighten(paths, found)))
        }
    }
}
