import ArgumentParser
import ReceiptVault

struct EditCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit", abstract: "Change a receipt's metadata.",
        discussion: "An empty value clears merchant, category or note. Example: receipt edit 1f2e3d4c --total 12.30")

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("Receipt id or prefix.", valueName: "id")) var id: String
    @OptionGroup var meta: MetadataOptions
    @Option(name: .customLong("tag"), help: "Replace the tags (repeatable).") var tags: [String] = []

    func run() throws {
        var changes = meta.metadata
        if !tags.isEmpty { changes.tags = tags }
        guard changes != ReceiptMetadata() else {
            throw VaultError(.badInput, "nothing to change: give --merchant, --date, --total, --currency, --category, --note or --tag")
        }
        let receipt = try options.openVault().edit(id, changes)
        if options.json { return try Output.json(receipt) }
        Output.line(summary(receipt))
    }
}
