import ArgumentParser
import ReceiptCatalog
import ReceiptVault

struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import files as receipts, one receipt per file; folders are walked.",
        discussion: """
            Symbolic links, FIFOs and sockets inside folders are skipped and reported. A file whose \
            name and content are already a receipt of the zone is not added again.
            Example: receipt import scans/ --date 2025-03-04 --merchant Acme --total 12.34 --currency USD

            With --manifest FILE.csv, imports the receipts a CSV describes (columns, any order: path, id, \
            filename, merchant, date, total, currency, category, note, tags, sha256, zone; only path is \
            required, relative to the CSV's folder). Every row is checked before anything is written; any \
            bad row is reported with its line number and nothing is imported (exit 2). Rows sharing an id \
            form one receipt; a row whose id exists updates that receipt, so re-importing changes nothing.
            Example: receipt import --manifest export-2025/manifest.csv
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: ArgumentHelp("Files or folders to import.", valueName: "path"))
    var paths: [String] = []

    @Option(help: "Zone to import into (default: personal; for a manifest, rows without a zone).") var zone: String?
    @Option(help: ArgumentHelp("Import the receipts a CSV manifest describes.", valueName: "file.csv"))
    var manifest: String?
    @OptionGroup var meta: MetadataOptions
    @Option(name: .customLong("tag"), help: "A tag (repeatable).") var tags: [String] = []

    func validate() throws {
        if manifest != nil {
            if !paths.isEmpty { throw ValidationError("give either --manifest or files and folders, not both") }
            if meta.metadata != ReceiptMetadata() || !tags.isEmpty {
                throw ValidationError("metadata options do not apply to --manifest: the manifest's columns give the metadata")
            }
        } else if paths.isEmpty {
            throw ValidationError("give files or folders to import (or --manifest FILE.csv)")
        }
    }

    func run() throws {
        let vault = try options.openVault()
        if let manifest {
            let progress = ProgressLine("importing")
            let report = try vault.importManifest(manifest, zone: zone) {
                switch $0.phase {
                case .checking: progress.update(label: "checking", items: $0.rowsDone, bytes: $0.bytesDone)
                case .importing:
                    progress.update(files: $0.rowsDone, of: $0.rowsTotal, bytes: $0.bytesDone, of: $0.bytesTotal)
                }
            }
            progress.finish()
            return try render(report, json: options.json)
        }
        var metadata = meta.metadata
        if !tags.isEmpty { metadata.tags = tags }
        let progress = ProgressLine("importing")
        let report = try vault.importFiles(paths, zone: zone ?? Zone.personal, metadata: metadata) {
            progress.update(files: $0.filesDone, of: $0.filesTotal, bytes: $0.bytesDone, of: $0.bytesTotal)
        }
        progress.finish()
        try render(report, json: options.json)
    }
}

/// Shared by file and manifest imports.
func render(_ report: ImportReport, json: Bool) throws {
    if json {
        try Output.json(report)
    } else {
        let added = report.imported.filter { !$0.existing }
        // One write for all lines: a manifest may add 100,000 receipts.
        var text = ""
        for item in added {
            text += "\(item.id.prefix(8))  \(item.path)\(item.deduplicated ? "  (content already stored)" : "")\n"
        }
        if !text.isEmpty { Output.write(text) }
        let existing = report.imported.count - added.count
        // Rows of a manifest may put several files into one receipt.
        let receipts = Set(added.map(\.id)).count
        Output.note("imported \(receipts) receipt(s)" + (receipts != added.count ? " with \(added.count) file(s)" : "")
            + (existing > 0 ? ", \(existing) already present" : "")
            + (report.failed.isEmpty ? "" : ", \(report.failed.count) failed"))
    }
    for failure in report.failed { Output.note("receipt: \(failure.path): \(failure.error)") }
    if !report.failed.isEmpty { throw ExitCode(Failure.problems) }
}
