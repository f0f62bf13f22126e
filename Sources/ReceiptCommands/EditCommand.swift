import ArgumentParser
import ReceiptVault

struct EditCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit", abstract: "Change a receipt's metadata.",
        discussion: """
            An empty value clears merchant, category, note, claim or reimbursed-on. \
            Example: receipt edit 1f2e3d4c --total 12.30
            Claims: receipt edit 1f2e3d4c --status reimbursed --claim HSA-2025-0117 --reimbursed-on 2025-04-02
            """)

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("Receipt id or prefix.", valueName: "id")) var id: String
    @OptionGroup var meta: MetadataOptions
    @Option(name: .customLong("tag"), help: "Replace the tags (repeatable).") var tags: [String] = []
    @Option(help: ArgumentHelp("Where its claim stands.", valueName: "none|submitted|reimbursed|denied")) var status: String?
    @Option(help: ArgumentHelp("The insurer's or plan's claim reference.", valueName: "ref")) var claim: String?
    @Option(help: ArgumentHelp("The day it was reimbursed.", valueName: "YYYY-MM-DD")) var reimbursedOn: String?

    func run() throws {
        var changes = meta.metadata
        if !tags.isEmpty { changes.tags = tags }
        changes.status = status
        changes.claim = claim
        changes.reimbursedOn = reimbursedOn
        guard changes != ReceiptMetadata() else {
            throw VaultError(.badInput, "nothing to change: give --merchant, --date, --total, --currency, --category, --note, "
                + "--tag, --status, --claim or --reimbursed-on")
        }
        let receipt = try options.openVault().edit(id, changes)
        if options.json { return try Output.json(receipt) }
        Output.line(summary(receipt))
    }
}
