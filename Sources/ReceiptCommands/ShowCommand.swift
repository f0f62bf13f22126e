import ArgumentParser
import ReceiptVault

struct ShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show one receipt.",
        discussion: """
            ID is the receipt's UUID or a unique prefix of at least 8 characters. --text prints the text             extracted from each attachment, headed by its file name (--json: [{"filename", "text"}]).
            """)

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("Receipt id or prefix.", valueName: "id")) var id: String
    @Flag(help: "Print the text extracted from each attachment.") var text = false

    func run() throws {
        let vault = try options.openVaultForReading()
        if text {
            let texts = try vault.extractedTexts(id)
            if options.json { return try Output.json(texts) }
            for (index, file) in texts.enumerated() {
                if index > 0 { Output.line("") }
                Output.line("== \(file.filename)")
                Output.line(file.text ?? "(no text extracted: see `receipt index`)")
            }
            return
        }
        let receipt = try vault.show(id)
        if options.json { return try Output.json(receipt) }
        describe(receipt)
    }
}

func describe(_ r: ReceiptView) {
    Output.line("id:        \(r.id)")
    Output.line("zone:      \(r.zone)")
    for (label, value) in [("merchant", r.merchant), ("date", r.date), ("total", r.total), ("currency", r.currency),
                           ("category", r.category), ("note", r.note)] {
        let read = r.filled.contains(label) ? "  (read from the text: `receipt review` to confirm)" : ""
        Output.line("\((label + ":").padding(toLength: 11, withPad: " ", startingAt: 0))\(value ?? "-")\(read)")
    }
    for (name, s) in r.suggestions.sorted(by: { $0.key < $1.key }) {
        Output.line("suggested: \(name) \(s.value) (\(Int(s.confidence * 100)) %) from \"\(s.line)\"")
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
