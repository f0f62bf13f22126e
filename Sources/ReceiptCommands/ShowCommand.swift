import ArgumentParser
import ReceiptVault

struct ShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show one receipt.",
        discussion: "ID is the receipt's UUID or a unique prefix of at least 8 characters.")

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("Receipt id or prefix.", valueName: "id")) var id: String

    func run() throws {
        let receipt = try options.openVaultForReading().show(id)
        if options.json { return try Output.json(receipt) }
        describe(receipt)
    }
}

func describe(_ r: ReceiptView) {
    Output.line("id:        \(r.id)")
    Output.line("zone:      \(r.zone)")
    for (label, value) in [("merchant", r.merchant), ("date", r.date), ("total", r.total), ("currency", r.currency),
                           ("category", r.category), ("note", r.note)] {
        Output.line("\((label + ":").padding(toLength: 11, withPad: " ", startingAt: 0))\(value ?? "-")")
    }
    if !r.tags.isEmpty { Output.line("tags:      \(r.tags.joined(separator: ", "))") }
    if r.status != "none" || r.claim != nil || r.reimbursedOn != nil {
        Output.line("status:    \(r.status)")
        Output.line("claim:     \(r.claim ?? "-")")
        Output.line("paid on:   \(r.reimbursedOn ?? "-")")
    }
    for a in r.attachments {
        Output.line("file:      \(a.filename)  \(a.mediaType)  \(a.size) bytes  \(a.sha256)")
    }
}
