import ArgumentParser
import ReceiptVault

struct AttachCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "attach", abstract: "Add files to a receipt.")

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("Receipt id or prefix.", valueName: "id")) var id: String
    @Argument(help: ArgumentHelp("Files to attach.", valueName: "path")) var paths: [String]

    func validate() throws {
        if paths.isEmpty { throw ValidationError("give the files to attach") }
    }

    func run() throws {
        let receipt = try options.openVault().attach(id, paths: paths)
        if options.json { return try Output.json(receipt) }
        describe(receipt)
    }
}

struct DetachCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "detach", abstract: "Remove an attachment from a receipt (its blob stays until gc).")

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("Receipt id or prefix.", valueName: "id")) var id: String
    @Argument(help: ArgumentHelp("The attachment's SHA-256 (or a unique prefix of 8+ characters).", valueName: "sha256"))
    var sha256: String

    func run() throws {
        let receipt = try options.openVault().detach(id, blob: sha256)
        if options.json { return try Output.json(receipt) }
        describe(receipt)
    }
}
