import ArgumentParser
import BlobStore
import Foundation
import ReceiptCatalog
import ReceiptVault
#if canImport(Glibc)
import Glibc
#endif

struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import files as receipts, one receipt per file; folders are walked.",
        discussion: """
            Symbolic links, FIFOs and sockets inside folders are skipped and reported. A file whose \
            name and content are already a receipt of the zone is not added again.
            Example: receipt import scans/ --date 2025-03-04 --merchant Acme --total 12.34 --currency USD

            With --manifest FILE.csv, imports the receipts a CSV describes (columns, any order: path, id, \
            filename, merchant, date, total, currency, category, note, tags, sha256, zone, status, claim, \
            reimbursed_on; only path is required, relative to the CSV's folder; a ' before a cell beginning \
            with =, +, -, @, ', tab or CR is taken off). Every row is checked before anything is written; any \
            bad row is reported with its line number and nothing is imported (exit 2). Rows sharing an id \
            form one receipt; a row whose id exists updates that receipt, so re-importing changes nothing.
            Example: receipt import --manifest export-2025/manifest.csv

            After committing, import extracts the text of what it imported for `receipt search` (of \
            every attachment still pending, after a manifest); --no-index skips that (see `receipt index`).
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: ArgumentHelp("Files or folders to import.", valueName: "path"))
    var paths: [String] = []

    @Option(help: "Zone to import into (default: personal; for a manifest, rows without a zone).") var zone: String?
    @Option(help: ArgumentHelp("Import the receipts a CSV manifest describes.", valueName: "file.csv"))
    var manifest: String?
    @OptionGroup var meta: MetadataOptions
    @Option(name: .customLong("tag"), help: "A tag (repeatable).") var tags: [String] = []
    @Flag(help: "Do not extract the text of what was imported (run `receipt index` later).") var noIndex = false
    @OptionGroup var text: TextOptions

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
            // A row may add a file to a receipt that exists: only receipts created from here on are new.
            let started = nowMillis()
            let progress = ProgressLine("importing")
            let update: (ManifestProgress) -> Void = {
                switch $0.phase {
                case .checking: progress.update(label: "checking", items: $0.rowsDone, bytes: $0.bytesDone)
                case .importing:
                    progress.update(files: $0.rowsDone, of: $0.rowsTotal, bytes: $0.bytesDone, of: $0.bytesTotal)
                }
            }
            if options.json {
                // The same document `render` prints, but the rows are spooled to a temporary file as
                // each batch commits (the failures, which come first, are known only at the end).
                let spool = try JSONReportSpool(in: vault.interimPath)
                let summary = try vault.importManifestStreamed(manifest, zone: zone, progress: update) { try spool.add($0) }
                progress.finish()
                // Read first, as for files: a duplicate is known only once the new receipts' text and fields are.
                try indexAfterImport(vault, only: nil)
                try spool.print(failed: summary.failed, duplicates: spool.anyAdded ? Self.possibleDuplicates(createdSince: started, vault) : [:])
                return try renderFailures(summary.failed)
            }
            // Lines go out as each batch commits, not all at the end: memory stays flat with the row count.
            var text = ""
            var anyAdded = false
            let summary: ManifestSummary
            do {
                summary = try vault.importManifestStreamed(manifest, zone: zone, progress: update) { item in
                    guard !item.existing else { return }
                    anyAdded = true
                    text += Self.line(item)
                    if text.utf8.count >= 1 << 16 {
                        progress.finish()
                        Output.write(text)
                        text = ""
                    }
                }
            } catch {
                // What committed before a failure is listed too: the error says how much that was.
                progress.finish()
                if !text.isEmpty { Output.write(text) }
                throw error
            }
            progress.finish()
            if !text.isEmpty { Output.write(text) }
            return try thenIndex(vault, only: nil, render: {
                try renderSummary(added: summary.added, receipts: summary.receiptsAdded, existing: summary.existing,
                                  failed: summary.failed)
            }, then: { if anyAdded { Self.printDuplicates(Self.possibleDuplicates(createdSince: started, vault)) } })
        }
        var metadata = meta.metadata
        if !tags.isEmpty { metadata.tags = tags }
        let progress = ProgressLine("importing")
        let report = try vault.importFiles(paths, zone: zone ?? Zone.personal, metadata: metadata) {
            progress.update(files: $0.filesDone, of: $0.filesTotal, bytes: $0.bytesDone, of: $0.bytesTotal)
        }
        progress.finish()
        let blobs = Set(report.imported.map(\.sha256))
        if options.json {
            // Read first: a duplicate is known only once the new receipts' text and fields are.
            try indexAfterImport(vault, only: blobs)
            return try render(Self.markingDuplicates(report, vault), json: true)
        }
        let added = Set(report.imported.filter { !$0.existing }.map(\.id))
        try thenIndex(vault, only: blobs, render: { try render(report, json: false) },
                      then: { Self.printDuplicates(Self.possibleDuplicates(of: added, vault)) })
    }

    /// The report with each new receipt's possible duplicates.
    static func markingDuplicates(_ report: ImportReport, _ vault: Vault) -> ImportReport {
        let found = possibleDuplicates(of: Set(report.imported.filter { !$0.existing }.map(\.id)), vault)
        var marked = report
        for i in marked.imported.indices where !marked.imported[i].existing {
            marked.imported[i].possibleDuplicateOf = found[marked.imported[i].id]
        }
        return marked
    }

    /// Receipts each of `added` may duplicate; a failure to look reports none (the import stands).
    /// A manifest's rows (`createdSince`: when it started) are looked up in the vault's groups, in one pass.
    static func possibleDuplicates(of added: Set<ReceiptID>, _ vault: Vault) -> [ReceiptID: [ReceiptID]] {
        guard !added.isEmpty else { return [:] }
        return (try? vault.possibleDuplicates(of: added.sorted())) ?? [:]
    }

    /// As above for the receipts a manifest created (since `createdSince`, when it started), looked up
    /// in the vault's groups in one pass.
    static func possibleDuplicates(createdSince: Millis, _ vault: Vault) -> [ReceiptID: [ReceiptID]] {
        (try? vault.possibleDuplicates(createdSince: createdSince)) ?? [:]
    }

    /// One line per new receipt that may duplicate others (import, a manifest's import, watch).
    static func printDuplicates(_ found: [ReceiptID: [ReceiptID]]) {
        for (id, others) in found.sorted(by: { $0.key < $1.key }) {
            Output.line("\(id.short)  may duplicate \(others.map(\.short).joined(separator: ", "))"
                + " (`receipt dups` lists them; nothing was removed)")
        }
    }

    /// Renders the import's report, then indexes (also when some files failed: exit 1 comes after), then
    /// `then` (what needs the text read).
    func thenIndex(_ vault: Vault, only: Set<String>?, render: () throws -> Void, then: () -> Void = {}) throws {
        var rendered: Error?
        do { try render() } catch { rendered = error }
        try indexAfterImport(vault, only: only)
        then()
        if let rendered { throw rendered }
    }

    /// The text of what was just committed, for search: a failure here never fails the import.
    func indexAfterImport(_ vault: Vault, only: Set<String>?) throws {
        guard !noIndex, only?.isEmpty != true else { return }
        do {
            let outcome = try TextIndexing.run(vault, only: only, options: text)
            if outcome.extracted + outcome.failed > 0 {
                Output.note("indexed the text of \(outcome.extracted) file(s)" + (outcome.failed > 0 ? ", \(outcome.failed) failed" : ""))
            }
        } catch {
            Output.note("receipt: the import is committed, but its text was not indexed (\(Failure.describe(error).message)): "
                + "run `receipt index`")
        }
    }
}

/// Shared by file and manifest imports.
func render(_ report: ImportReport, json: Bool) throws {
    if json {
        try Output.json(report)
        try renderFailures(report.failed)
        return
    }
    let added = report.imported.filter { !$0.existing }
    // One write for all lines: an import may add 100,000 receipts.
    let text = added.map(ImportCommand.line).joined()
    if !text.isEmpty { Output.write(text) }
    // Rows of a manifest may put several files into one receipt.
    try renderSummary(added: added.count, receipts: Set(added.map(\.id)).count,
                      existing: report.imported.count - added.count, failed: report.failed)
}

/// The closing note on stderr (and the failures, one line each); exits 1 when any file failed.
func renderSummary(added: Int, receipts: Int, existing: Int, failed: [FailedFile]) throws {
    Output.note("imported \(receipts) receipt(s)" + (receipts != added ? " with \(added) file(s)" : "")
        + (existing > 0 ? ", \(existing) already present" : "")
        + (failed.isEmpty ? "" : ", \(failed.count) failed"))
    try renderFailures(failed)
}

func renderFailures(_ failed: [FailedFile]) throws {
    for failure in failed { Output.note("receipt: \(failure.path): \(failure.error)") }
    if !failed.isEmpty { throw ExitCode(Failure.problems) }
}

extension ImportCommand {
    /// One added file as the text output shows it.
    static func line(_ item: ImportedFile) -> String {
        "\(item.id.short)  \(item.path)\(item.deduplicated ? "  (content already stored)" : "")\n"
    }
}

/// `{"failed": [...], "imported": [...]}` as `Output.json` prints an `ImportReport`, with the imported
/// rows kept in an unlinked temporary file until the end instead of in memory: in the vault's private
/// interim/ folder, not in a system folder other users share.
final class JSONReportSpool {
    private let file: FileHandle
    private let encoder = Output.jsonEncoder()
    private let compact = JSONEncoder()
    private var count = 0
    private var pending = Data()
    /// Whether a row made a new receipt (their possible duplicates are looked up at the end, by when
    /// they were created: a set of every new id grew with the manifest).
    private(set) var anyAdded = false

    init(in folder: String) throws {
        var template = Array((folder + "/receipt-report-XXXXXX").utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else {
            throw VaultError(.io, "cannot create a temporary file for the report in \(folder): \(String(cString: strerror(errno)))")
        }
        _ = unlink(template)
        file = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
    }

    /// One row, kept as one compact line until `print` knows its possible duplicates.
    func add(_ item: ImportedFile) throws {
        count += 1
        if !item.existing { anyAdded = true }
        pending.append(try compact.encode(item))
        pending.append(UInt8(ascii: "\n"))
        if pending.count >= 1 << 16 { try flush() }
    }

    /// Prints the whole document: the envelope as the encoder writes it, the rows spliced in, each new
    /// one with the receipts it may duplicate.
    func print(failed: [FailedFile], duplicates: [ReceiptID: [ReceiptID]]) throws {
        try flush()
        let envelope = String(decoding: try encoder.encode(ImportReport(failed: failed)), as: UTF8.self)
        let emptyImported = "\"imported\" : [\n\n  ]\n}"
        guard count > 0, envelope.hasSuffix(emptyImported) else {
            return Output.write(envelope + "\n")
        }
        Output.write(String(envelope.dropLast(emptyImported.count)) + "\"imported\" : [\n")
        try file.seek(toOffset: 0)
        let decoder = JSONDecoder()
        var rest = Data()
        var first = true
        while let chunk = try file.read(upToCount: 1 << 16), !chunk.isEmpty {
            rest.append(chunk)
            var out = Data()
            while let end = rest.firstIndex(of: UInt8(ascii: "\n")) {
                var item = try decoder.decode(ImportedFile.self, from: rest[rest.startIndex..<end])
                rest = rest[(end + 1)...]
                if !item.existing { item.possibleDuplicateOf = duplicates[item.id] }
                let text = String(decoding: try encoder.encode(item), as: UTF8.self)
                out.append(contentsOf: Array(((first ? "" : ",\n") + text.split(separator: "\n", omittingEmptySubsequences: false)
                    .map { "    " + $0 }.joined(separator: "\n")).utf8))
                first = false
            }
            FileHandle.standardOutput.write(out)
        }
        Output.write("\n  ]\n}\n")
    }

    private func flush() throws {
        guard !pending.isEmpty else { return }
        try file.write(contentsOf: pending)
        pending.removeAll(keepingCapacity: true)
    }
}
