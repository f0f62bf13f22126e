import ArgumentParser
import ReceiptSync

struct RemoteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remote", abstract: "Point the vault at a sync server.",
        subcommands: [RemoteSetCommand.self, RemoteShowCommand.self])
}

struct RemoteSetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Set the server URL, account and token (the token file is readable by its owner only).")

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("The server, e.g. http://127.0.0.1:8080.", valueName: "url")) var url: String
    @Option(help: ArgumentHelp("The account on that server.", valueName: "name")) var account: String
    @Option(help: ArgumentHelp("The account's token, as `receipt server account-add` printed it.", valueName: "token"))
    var token: String

    struct Result: Encodable { let url: String; let account: String }

    func run() throws {
        let vault = try options.openVault()
        try RemoteConfig.set(vault, url: url, account: account, token: token)
        if options.json { return try Output.json(Result(url: url, account: account)) }
        Output.note("remote set to \(url) as \(account)")
    }
}

struct RemoteShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show the server URL and account.")

    @OptionGroup var options: VaultOptions

    struct Result: Encodable { let url: String?; let account: String? }

    func run() throws {
        let remote = try RemoteConfig.load(try options.openVault())
        if options.json { return try Output.json(Result(url: remote?.url, account: remote?.account)) }
        if let remote { Output.line("\(remote.url) \(remote.account)") } else { Output.note("no remote set") }
    }
}
