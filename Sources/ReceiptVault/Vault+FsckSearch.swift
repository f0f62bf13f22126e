import Foundation
import GRDB
import ReceiptCatalog

extension Vault {
    /// fsck's check of the search index: FTS5's own integrity check, and one row per receipt. The
    /// index is derived data (the catalog and the stored texts), so the repair rebuilds it whole.
    func checkSearchIndex(quick: Bool = false, sink: FsckSink) throws {
        // FTS5's integrity check is written as an INSERT: on a read-only file system SQLite reports
        // it as damage ("attempt to write a readonly database"), so there only the row counts run.
        var fs = statvfs()
        let readOnly = statvfs(path, &fs) == 0 && (fs.f_flag & UInt(ST_RDONLY)) != 0
        // --quick checks the row counts only: FTS5's check reads the whole index and its content.
        let problems = try catalog.searchIndexProblems(integrityCheck: !readOnly && !quick)
        guard !problems.isEmpty else { return }
        let found = problems.joined(separator: "; ")
        sink.emit(FsckProblem(.catalog, path: catalogPath, detail: found + ": run `receipt fsck --repair` to rebuild it",
                              fix: .rebuildSearchIndex(found)))
    }

    /// fsck's check of the counts the catalog keeps for `stats` against a recount (they are derived
    /// data too: the repair recounts).
    func checkKeptCounts(quick: Bool = false, sink: FsckSink) throws {
        let differences = try catalog.keptCountProblems(quick: quick)
        guard !differences.isEmpty else { return }
        let found = "the counts the catalog keeps for `receipt stats` differ from a recount ("
            + differences.joined(separator: "; ") + ")"
        sink.emit(FsckProblem(.catalog, path: catalogPath, detail: found + ": run `receipt fsck --repair` to recount them",
                              fix: .recount(found)))
    }

    /// The copies each attachment keeps: its receipt's id (so that fsck can name, and its repair
    /// recreate, a receipt whose row is gone) is that of the receipt whose row it is keyed by, and its
    /// size (so that listing needs no blob row) is its blob's.
    func checkAttachmentCopies(sink: FsckSink) throws {
        func check(_ count: (Database) throws -> Int, one: String, many: String, _ fix: (String) -> FsckFix) throws {
            let differing = try catalog.read(count)
            guard differing > 0 else { return }
            let found = differing == 1 ? "1 " + one : "\(differing) " + many
            sink.emit(FsckProblem(.catalog, path: catalogPath, detail: found + ": run `receipt fsck --repair` to correct them",
                                  fix: fix(found)))
        }
        try check(Catalog.attachmentSizeProblems, one: "attachment carries a size other than its blob's",
                  many: "attachments carry a size other than their blob's", FsckFix.resizeAttachments)
        try check(Catalog.attachmentIDProblems, one: "attachment names a receipt id other than its receipt row's",
                  many: "attachments name a receipt id other than their receipt row's", FsckFix.reidentifyAttachments)
    }
}
