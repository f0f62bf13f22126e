import CSQLitePolicy
import Synchronization

/// SQLite's temporary files (statement journals, sorts and temporary tables too large for memory)
/// go into the `interim/` folder (private, 0700) of the vault or server data this command works on:
/// by default SQLite takes /var/tmp or /tmp, which other users share, and fails with "disk I/O
/// error" where they are read-only. The setting is the process's (SQLite has no other), so the first
/// command to open a catalog decides it, before any connection exists; SQLite creates such a file
/// and removes its name at once, so it shows among interim/'s files only when its process was killed
/// between the two (`etilqs_…`: the next sync removes it, fsck reports it as a stale staging file).
enum SQLiteTemporaryFiles {
    private static let decided = Mutex(false)

    /// Temporary files go into `folder/interim` (created by the vault or server data, before its
    /// catalog). Only the first call counts.
    static func keep(in folder: String) {
        decided.withLock { done in
            guard !done else { return }
            done = true
            csqlite_temp_directory(folder.hasSuffix("/") ? folder + "interim" : folder + "/interim")
        }
    }
}
