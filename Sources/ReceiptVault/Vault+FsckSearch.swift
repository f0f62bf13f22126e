import Foundation
import ReceiptCatalog

extension Vault {
    /// fsck's check of the search index: FTS5's own integrity check, and one row per receipt. The
    /// index is derived data (the catalog and the stored texts), so `--repair` rebuilds it whole.
    func checkSearchIndex(repair: Bool, sink: FsckSink) throws {
        let problems = try catalog.searchIndexProblems()
        guard !problems.isEmpty else { return }
        if repair { try catalog.rebuildSearchIndex() }
        sink.emit(FsckProblem(.catalog, path: catalogPath, detail: problems.joined(separator: "; ")
            + (repair ? ": rebuilt it from the catalog and the stored text" : ": run `receipt fsck --repair` to rebuild it"),
            repaired: repair))
    }
}
