import ArgumentParser
import ReceiptVault

struct EditCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit", abstract: "Change a receipt's metadata.",
        discussion: """
            An empty value clears merchant, category, note, claim or reimbursed-on; --clear empties any \
            field. Example: receipt edit 1f2e3d4c --total 12.30
            Claims: receipt edit 1f2e3d4c --status reimbursed --claim HSA-2025-0117 --reimbursed-on 2025-04-02
            Clearing: receipt edit 1f2e3d4c --clear total,currency,tags
            """)

    /// The fields `--clear` empties, by the names the list and manifest use.
    static let clearable = ["merchant", "date", "total", "currency", "category", "note", "tags", "claim", "reimbursedOn"]

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("Receipt id or prefix.", valueName: "id")) var id: String
    @OptionGroup var meta: MetadataOptions
    @Option(name: .customLong("tag"), help: "Replace the tags (repeatable).") var tags: [String] = []
    @Option(help: ArgumentHelp("Where its claim stands.", valueName: "none|submitted|reimbursed|denied")) var status: String?
    @Option(help: ArgumentHelp("The insurer's or plan's claim reference.", valueName: "ref")) var claim: String?
    @Option(help: ArgumentHelp("The day it was reimbursed.", valueName: "YYYY-MM-DD")) var reimbursedOn: String?
    @Option(help: ArgumentHelp("Empty these fields (comma-separated, repeatable): " + clearable.joined(separator: ", ") + ".",
                               valueName: "field,…"))
    var clear: [String] = []

    func run() throws {
        var changes = meta.metadata
        if !tags.isEmpty { changes.tags = tags }
        changes.status = status
        changes.claim = claim
        changes.reimbursedOn = reimbursedOn
        try Self.clearing(clear.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }, &changes)
        guard changes != ReceiptMetadata() else {
            throw VaultError(.badInput, "nothing to change: give --merchant, --date, --total, --currency, --category, --note, "
                + "--tag, --status, --claim, --reimbursed-on or --clear")
        }
        let receipt = try options.openVault().edit(id, changes)
        if options.json { return try Output.json(receipt) }
        Output.line(summary(receipt))
    }

    /// Sets each named field to its empty value (`edit` stores an empty value as none); a field both
    /// set and cleared is refused, as is a name that is no field.
    static func clearing(_ fields: [Substring], _ changes: inout ReceiptMetadata) throws {
        for raw in fields {
            let field = raw.trimmingCharacters(in: .whitespaces)
            let path: WritableKeyPath<ReceiptMetadata, String?>
            switch field.lowercased() {
            case "tags":
                guard changes.tags == nil else { throw conflict("tags") }
                changes.tags = []
                continue
            case "merchant": path = \.merchant
            case "date": path = \.date
            case "total": path = \.total
            case "currency": path = \.currency
            case "category": path = \.category
            case "note": path = \.note
            case "claim": path = \.claim
            case "reimbursedon", "reimbursed_on", "reimbursed-on": path = \.reimbursedOn
            default:
                throw VaultError(.badInput, "invalid --clear field '\(field)': expected one of " + clearable.joined(separator: ", "))
            }
            if let given = changes[keyPath: path], !given.isEmpty { throw conflict(field) }
            changes[keyPath: path] = ""
        }
    }

    private static func conflict(_ field: String) -> VaultError {
        VaultError(.badInput, "--clear \(field) and a new \(field) were both given: give one")
    }
}
