import ArgumentParser
import ReceiptSync

struct ZoneCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "zone", abstract: "Create and list zones.",
        subcommands: [ZoneCreateCommand.self, ZoneListCommand.self])
}

struct ZoneCreateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create", abstract: "Create a zone (on the server at the next sync).")

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("The zone name: letters, digits, '.', '_' or '-'.", valueName: "name")) var name: String

    struct Result: Encodable { let zone: String }

    func run() throws {
        try Zones.create(try options.openVault(), name: name)
        if options.json { return try Output.json(Result(zone: name)) }
        Output.note("created zone \(name)")
    }
}

struct ZoneListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "This vault's zones, and zones shared with its account (as OWNER/NAME).")

    @OptionGroup var options: VaultOptions

    func run() throws {
        let zones = try Zones.list(try options.openVault())
        if options.json { return try Output.json(zones) }
        for z in zones {
            Output.line("\(z.zone)\t\(z.owner ?? "-")\t\(z.role)\(z.shared ? "\tshared" : "")")
        }
    }
}
