import ArgumentParser
import BlobStore
import ReceiptCatalog
import ReceiptVault

struct InitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create the vault; on an existing vault change nothing and say so.",
        discussion: "Example: receipt --vault ~/receipts init --compression auto")

    @OptionGroup var options: VaultOptions

    @Option(help: ArgumentHelp("Blobs smaller than this many bytes live inside the catalog (0 = every blob is a file).",
                               valueName: "bytes"))
    var inlineThreshold: Int64 = VaultSettings.defaultInlineThreshold

    @Option(help: ArgumentHelp("none, xz, or auto (xz only where it saves at least 10 %).", valueName: "mode"))
    var compression: String = "auto"

    struct Result: Encodable {
        let vault: String
        let created: Bool
        let inlineThreshold: Int64
        let compression: String
    }

    func run() throws {
        guard let mode = CompressionMode(rawValue: compression) else {
            throw VaultError(.badInput, "invalid compression '\(compression)': expected none, xz or auto")
        }
        SQLiteTemporaryFiles.keep(in: options.vaultPath)
        let (vault, created) = try Vault.create(at: options.vaultPath, inlineThreshold: inlineThreshold, compression: mode)
        let result = Result(vault: vault.path, created: created, inlineThreshold: vault.settings.inlineThreshold,
                            compression: vault.settings.compression.rawValue)
        if options.json { return try Output.json(result) }
        Output.line(created
            ? "Created vault \(vault.path) (inline threshold \(result.inlineThreshold) bytes, compression \(result.compression))"
            : "Vault \(vault.path) already exists; nothing changed")
    }
}
