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
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: ArgumentHelp("Files or folders to import.", valueName: "path"))
    var paths: [String] = []

    @Option(help: "Zone to import into.") var zone: String = Zone.personal
    @OptionGroup var meta: MetadataOptions
    @Option(name: .customLong("tag"), help: "A tag (repeatable).") var tags: [String] = []

    func validate() throws {
        if paths.isEmpty { throw ValidationError("give files or folders to import") }
    }

    func run() throws {
        let vault = try options.openVault()
        var metadata = meta.metadata
        if !tags.isEmpty { metadata.tags = tags }
        let progress = ProgressLine("importing")
        let report = try vault.importFiles(paths, zone: zone, metadata: metadata) {
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
        for item in added {
            Output.line("\(item.id.prefix(8))  \(item.path)\(item.deduplicated ? "  (content already stored)" : "")")
        }
        let existing = report.imported.count - added.count
        Output.note("imported \(added.count) receipt(s)" + (existing > 0 ? ", \(existing) already present" : "")
            + (report.failed.isEmpty ? "" : ", \(report.failed.count) failed"))
    }
    for failure in report.failed { Output.note("receipt: \(failure.path): \(failure.error)") }
    if !report.failed.isEmpty { throw ExitCode(Failure.problems) }
}
