import ArgumentParser
import Foundation
import ReceiptSync
import ReceiptVault

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
            The token: --token-stdin reads it from standard input; else --token, else $RECEIPT_TOKEN.
            Example: receipt remote set https://nas.local:8443 --account alice --token-stdin < alice.token
            """)

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("The server, e.g. https://nas.local:8443.", valueName: "url")) var url: String
    @Option(help: ArgumentHelp("The account on that server.", valueName: "name")) var account: String
    @Option(help: ArgumentHelp("The account's token, as `receipt server account-add` printed it (it stays in the shell's "
                               + "history: prefer --token-stdin or RECEIPT_TOKEN).", valueName: "token"))
    var token: String?
    @Flag(name: .customLong("token-stdin"), help: "Read the token from standard input (its first line).")
    var tokenStdin = false
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
        try await RemoteConfig.set(vault, url: url, account: account, token: try givenToken(), caFile: caFile, pin: pin,
                                   insecureHTTP: insecureHTTP)
        let trust = pin != nil ? "pin" : caFile != nil ? "ca" : url.hasPrefix("https://") ? "system" : "none"
        if options.json { return try Output.json(Result(url: url, account: account, trust: trust)) }
        Output.note("remote set to \(url) as \(account)")
    }
}

extension RemoteSetCommand {
    func validate() throws {
        if tokenStdin && token != nil { throw ValidationError("give either --token or --token-stdin, not both") }
    }

    /// The token from standard input, the command line or the environment, in that order; checked by
    /// `RemoteConfig.set` (it never appears in an error message).
    func givenToken() throws -> String {
        if tokenStdin {
            guard let line = readLine(strippingNewline: true)?.trimmingCharacters(in: .whitespaces), !line.isEmpty else {
                throw VaultError(.badInput, "no token on standard input (--token-stdin reads its first line)")
            }
            return line
        }
        if let token { return token }
        if let token = ProcessInfo.processInfo.environment["RECEIPT_TOKEN"], !token.isEmpty { return token }
        throw VaultError(.badInput, "no token: give --token-stdin (and the token on standard input), set RECEIPT_TOKEN, or --token")
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
