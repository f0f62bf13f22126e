import ArgumentParser
import Foundation
import ReceiptText
import ReceiptVault

/// Flags of the commands that extract text (`index`, `import`).
struct TextOptions: ParsableArguments {
    @Option(name: .customLong("lang"),
            help: ArgumentHelp("Tesseract language for OCR (repeatable; default: every language installed).", valueName: "eng"))
    var languages: [String] = []
}

/// Text extraction as the commands run it: tools found on $PATH, progress on a terminal, and one
/// notice per missing tool naming the Debian package that provides it.
enum TextIndexing {
    static func tools(_ options: TextOptions) throws -> ExtractorTools {
        let env = ProcessInfo.processInfo.environment
        do {
            return try ExtractorTools.locate(searchPath: env["PATH"], environment: env,
                                             languages: options.languages.isEmpty ? nil : options.languages)
        } catch let error as ExtractorSetupError {
            throw VaultError(.badInput, error.message)
        }
    }

    @discardableResult
    static func run(_ vault: Vault, only: Set<String>? = nil, rebuild: Bool = false, options: TextOptions) throws -> IndexOutcome {
        let tools = try tools(options)
        let progress = ProgressLine("indexing")
        let outcome = try vault.indexText(only: only, rebuild: rebuild, tools: tools) { step in
            progress.update(label: "indexing", items: step.done, of: step.total)
        }
        progress.finish()
        for missing in outcome.missingTools {
            Output.note("receipt: \(missing.tool) is not installed: those files are searched by their metadata only; "
                + "install the Debian package \(missing.package), then run `receipt index`")
        }
        for failure in outcome.failures {
            Output.note("receipt: no text from blob \(failure.sha256): \(failure.reason)")
        }
        return outcome
    }
}

struct IndexCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "index",
        abstract: "Extract the text of attachments not yet extracted, for search.",
        discussion: """
            Text of PDFs comes from pdftotext (Debian poppler-utils), of images and of PDF pages without \
            a text layer from Tesseract OCR (tesseract-ocr, tesseract-ocr-eng), one process per core, \
            each under a time and memory limit. A file an extractor fails on is recorded as failed and \
            not tried again; a missing tool leaves its files pending. Killed, it resumes where it was. \
            `import` runs this for what it imported unless --no-index.
            --rebuild extracts everything again (after an upgrade of receipt's extractors).
            --json: {"extracted", "failed", "pending"}. Exit 1 when some file failed.
            Example: receipt index --lang eng --lang deu
            """)

    @OptionGroup var options: VaultOptions
    @OptionGroup var text: TextOptions
    @Flag(help: "Extract the text of every attachment again.") var rebuild = false

    func run() throws {
        let vault = try options.openVault()
        let outcome = try TextIndexing.run(vault, rebuild: rebuild, options: text)
        if options.json {
            try Output.json(outcome)
        } else {
            Output.line("extracted \(outcome.extracted), failed \(outcome.failed), pending \(outcome.pending)")
        }
        if outcome.failed > 0 { throw ExitCode(Failure.problems) }
    }
}
