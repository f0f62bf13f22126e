import ArgumentParser
import ReceiptSync
import ReceiptWire

struct ShareCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "share", abstract: "Share one of your zones with another account (owner only).")

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("Your zone.", valueName: "zone")) var zone: String
    @Argument(help: ArgumentHelp("The account to share it with.", valueName: "account")) var account: String
    @Option(help: ArgumentHelp("read or write.", valueName: "role")) var role: String

    struct Result: Encodable { let zone: String; let account: String; let role: String }

    func validate() throws {
        if role != "read" && role != "write" { throw ValidationError("--role must be read or write, not '\(role)'") }
    }

    func run() async throws {
        let vault = try options.openVault()
        try await Zones.share(vault, zone: zone, with: account, role: role == "read" ? .read : .write)
        if options.json { return try Output.json(Result(zone: zone, account: account, role: role)) }
        Output.note("shared zone \(zone) with \(account) (\(role))")
    }
}

struct UnshareCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unshare", abstract: "Stop sharing one of your zones with an account (owner only).")

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("Your zone.", valueName: "zone")) var zone: String
    @Argument(help: ArgumentHelp("The account to remove.", valueName: "account")) var account: String

    struct Result: Encodable { let zone: String; let account: String }

    func run() async throws {
        let vault = try options.openVault()
        try await Zones.unshare(vault, zone: zone, with: account)
        if options.json { return try Output.json(Result(zone: zone, account: account)) }
        Output.note("zone \(zone) is no longer shared with \(account)")
    }
}
