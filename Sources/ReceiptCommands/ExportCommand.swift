import BlobStore
import ArgumentParser
import Foundation
import ReceiptVault

struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export receipts' files with manifest.csv and receipts.json, to a folder or a zip file.",
        discussion: """
            DEST is a new or empty folder, or with --zip a .zip file that does not exist yet. Each \
            attachment's original bytes are written under a readable, safe name such as \
            2025/03/2025-03-04_acme_1f2e3d4c.pdf (undated receipts under undated/), beside \
            manifest.csv (importable with `receipt import --manifest`) and receipts.json (the \
            `list --json` shape). A missing or corrupt blob is reported, the rest is still exported, \
            and the exit status is 1.
            Example: receipt export tax-2025.zip --zip --from 2025-01-01 --to 2025-12-31

            --for claim writes a package for an insurer or accountant: files numbered in date order \
            (001_2025-03-04_cvs-pharmacy.pdf), index.csv (number, date, merchant, total, currency, \
            category, status, claim, file, sha256), summary.txt (exact totals per currency) and \
            SHA256SUMS (check with `sha256sum -c SHA256SUMS`), besides manifest.csv and receipts.json.
            Example: receipt export hsa-2025 --for claim --category health --status submitted
            A receipt without a merchant is named after its attachment's file name.
            """)

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("The folder (or with --zip, the .zip file) to create.", valueName: "dest"))
    var destination: String
    @OptionGroup var scope: ScopeOptions
    @Option(name: .customLong("for"), help: ArgumentHelp("Who the export is for.", valueName: "plain|claim")) var purpose = "plain"
    @Flag(help: "Write one zip file instead of a folder.") var zip = false

    func run() throws {
        // The exported copies are for the user to hand on: the user's umask decides who reads them.
        _ = umask(userUmask)
        guard let purpose = ExportPurpose(rawValue: purpose) else {
            throw VaultError(.badInput, "invalid --for '\(purpose)': expected plain or claim")
        }
        let vault = try options.openVault()
        let progress = ProgressLine("exporting")
        let filter = scope.scope
        let report = try vault.export(to: destination, filter: filter, zip: zip, for: purpose) {
            progress.update(files: $0.filesDone, of: $0.filesTotal, bytes: $0.bytesDone, of: $0.bytesTotal)
        }
        progress.finish()
        if options.json {
            try Output.json(report)
        } else {
            Output.note("exported \(report.receipts) receipt(s), \(report.files.count) file(s), "
                + "\(ByteCount.text(report.bytes)) to \(report.destination)"
                + (report.failed.isEmpty ? "" : "; \(report.failed.count) file(s) failed"))
        }
        for failure in report.failed {
            Output.note("receipt: receipt \(failure.receipt): blob \(failure.sha256): \(failure.error)")
        }
        if !report.failed.isEmpty { throw ExitCode(Failure.problems) }
    }
}
