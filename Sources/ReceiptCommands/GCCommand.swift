import BlobStore
import ArgumentParser
import ReceiptVault

struct GCCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gc",
        abstract: "Delete unreferenced blobs and stale staging files older than the grace.",
        discussion: """
            A blob is garbage when no receipt's attachment refers to it. gc holds the vault lock \
            exclusively while it decides and deletes, so an import running at the same time is never \
            robbed of a blob it is about to refer to; the grace (default 1h; 0 = now) also spares \
            anything written or reused more recently. Examples: receipt gc --dry-run; receipt gc --grace 10m
            """)

    @OptionGroup var options: VaultOptions

    @Flag(name: .long, help: "Show what would be removed; change nothing.")
    var dryRun = false

    @Option(name: .long, help: ArgumentHelp("Spare anything younger than this: 0, 30s, 10m, 1h, 2d, 1w.", valueName: "duration"))
    var grace: String = GraceDuration.defaultText

    func run() throws {
        guard let seconds = GraceDuration.seconds(grace) else {
            throw VaultError(.badInput, "invalid --grace '\(grace)': give 0 or a whole number with a unit s, m, h, d or w (e.g. 30s, 10m, 1h, 2d)")
        }
        let vault = try options.openVault()
        let progress = ProgressLine("collecting garbage")
        let report = try vault.collectGarbage(graceSeconds: seconds, dryRun: dryRun) { done, total in
            progress.update(files: done, of: total, bytes: 0, of: 0)
        }
        progress.finish()
        if options.json { return try Output.json(report) }
        let verb = dryRun ? "would remove" : "removed"
        if dryRun {
            for blob in report.blobs {
                Output.line("\(verb) blob \(blob.sha256)  \(ByteCount.text(blob.bytes))\(blob.inline ? " (inline)" : blob.hasRow ? "" : " (no catalog row)")")
            }
            for file in report.interim { Output.line("\(verb) staging file \(file.path)  \(ByteCount.text(file.bytes))") }
        }
        Output.line("\(verb) \(report.removedBlobs) blob(s) and \(report.removedInterim) staging file(s), "
            + "\(ByteCount.text(report.reclaimedBytes)) \(dryRun ? "to reclaim" : "reclaimed")")
        if !report.keptOlderThanCatalog.isEmpty {
            Output.note("receipt: kept \(report.keptOlderThanCatalog.count) blob file(s) that no catalog row records and that are "
                + "older than the catalog itself: run `receipt fsck --repair` to keep them as receipts of zone 'recovered'")
        }
    }
}
