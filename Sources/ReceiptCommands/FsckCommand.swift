import ArgumentParser
import BlobStore
import Foundation
import ReceiptSync
import ReceiptVault

struct FsckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fsck",
        abstract: "Check the catalog and every blob; with --repair, fix what can be fixed without losing anything.",
        discussion: """
            Checks SQLite's integrity and foreign keys, that every referenced blob is present, that \
            every blob file is named by its hash and (unless --quick) re-hashes to it, that sizes agree, \
            and that no stray or stale staging file is left. Exit 0 when clean, 1 when problems are left.
            --repair moves corrupt blobs to quarantine/ (never deleting them), fetches missing or corrupt \
            blobs back from the sync server where one is set, removes stale staging files, keeps blob \
            files no row records as receipts of zone 'recovered', and rebuilds a catalog SQLite cannot \
            read (the old one is set aside in quarantine/). A catalog written by a newer receipt is never \
            rebuilt: upgrade receipt instead.
            """)

    @OptionGroup var options: VaultOptions

    @Flag(name: .long, help: """
        Check presence and sizes only; do not re-hash blob files, and leave the pages of the extracted \
        text and the search index (rebuilt from the rest) to the full check.
        """)
    var quick = false

    @Flag(name: .long, help: "Fix the problems found (nothing a user imported is ever deleted).")
    var repair = false

    func run() async throws {
        let path = options.vaultPath
        SQLiteTemporaryFiles.keep(in: path)
        // Where missing blobs come back from: the sync server, when the catalog can say which. The
        // catalog is closed again at once (the fetcher needs only the blob tree and the settings):
        // repair may set this very file aside.
        var refetcher: (any BlobRefetcher)?
        if repair, let vault = try? Vault.open(at: path) {
            if let remote = try? RemoteBlobFetcher(vault: vault) { refetcher = ServerRefetcher(remote: remote) }
            try? vault.close()
        }
        let json = options.json
        let line = ProgressLine("checking")
        let report = try await Vault.fsck(
            at: path, options: FsckOptions(quick: quick, repair: repair, refetcher: refetcher),
            onProblem: { problem in
                guard !json else { return }
                line.finish()
                let mark = problem.repaired ? "repaired" : "problem"
                Output.line("\(mark): \(problem.kind.rawValue): \(problem.detail)"
                    + (problem.receipts.isEmpty ? "" : " [receipt\(problem.receipts.count > 1 ? "s" : "") "
                        + problem.receipts.prefix(5).joined(separator: ", ") + (problem.receipts.count > 5 ? ", …" : "") + "]"))
            },
            progress: { p in line.update(files: p.blobsDone, of: p.blobsTotal, bytes: p.bytesDone, of: p.bytesTotal) })
        line.finish()
        if json {
            try Output.json(report)
        } else {
            let left = report.problems.filter { !$0.repaired }.count
            let repaired = report.problems.count - left
            let how = report.quick ? "checked by size only (--quick)" : "re-hashed"
            Output.note("checked \(report.checkedBlobs) blob(s), \(ByteCount.text(report.checkedBytes)) \(how) in "
                + String(format: "%.1f", report.seconds) + " s: "
                + (report.problems.isEmpty ? "no problems" : "\(left) problem(s) left" + (repaired > 0 ? ", \(repaired) repaired" : "")))
        }
        if !report.ok { throw ExitCode(1) }
    }
}

/// The sync engine's download, as the seam fsck --repair fetches through.
struct ServerRefetcher: BlobRefetcher {
    let remote: RemoteBlobFetcher

    func fetch(_ id: BlobID, into store: BlobStore) async throws -> StagedBlob? {
        do {
            return try await remote.restore(id)
        } catch let error as SyncError where error.status == 404 {
            return nil
        }
    }
}
