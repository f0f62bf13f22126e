import ArgumentParser
import ReceiptSync

struct RemoteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remote", abstract: "Point the vault at a sync server.",
        subcommands: [RemoteSetCommand.self, RemoteShowCommand.self])
}

struct RemoteSetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Set the server URL, account and token (the token file is readable by its owner only).",
        discussion: """
            An https:// server is verified against the system's trust store, or the CA of --ca-file, or, \
            with --pin, must present the certificate whose SHA-256 `receipt server cert` printed. Plain \
            http:// is refused to any host but this machine unless --insecure-http.
            """)

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("The server, e.g. https://nas.local:8443.", valueName: "url")) var url: String
    @Option(help: ArgumentHelp("The account on that server.", valueName: "name")) var account: String
    @Option(help: ArgumentHelp("The account's token, as `receipt server account-add` printed it.", valueName: "token"))
    var token: String
    @Option(name: .customLong("ca-file"), help: ArgumentHelp("Trust the server's certificate when this CA (PEM) signed it.", valueName: "pem"))
    var caFile: String?
    @Option(help: ArgumentHelp("Trust exactly the server certificate with this SHA-256 (as `receipt server cert` printed it).", valueName: "sha256"))
    var pin: String?
    @Flag(name: .customLong("insecure-http"), help: "Allow plain http:// to a host other than this machine (token and receipts unencrypted).")
    var insecureHTTP = false

    struct Result: Encodable { let url: String; let account: String; let trust: String }

    func run() async throws {
        let vault = try options.openVault()
        defer { try? vault.close() }
        try await RemoteConfig.set(vault, url: url, account: account, token: token, caFile: caFile, pin: pin, insecureHTTP: insecureHTTP)
        let trust = pin != nil ? "pin" : caFile != nil ? "ca" : url.hasPrefix("https://") ? "system" : "none"
        if options.json { return try Output.json(Result(url: url, account: account, trust: trust)) }
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
