import ArgumentParser
import Foundation
import Logging
import ReceiptServer

struct ServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "server", abstract: "Run a sync server, or manage the accounts, tokens and blobs of its data folder.",
        subcommands: [ServerAccountAddCommand.self, ServerAccountListCommand.self, ServerTokenAddCommand.self,
                      ServerTokenRotateCommand.self, ServerTokenRevokeCommand.self, ServerAccountQuotaCommand.self,
                      ServerAccountRemoveCommand.self, ServerRunCommand.self,
                      ServerPasswdCommand.self, ServerSessionsRevokeCommand.self])
}

struct ServerAccountAddCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "account-add",
        abstract: "Create an account on a server's data folder and print its token (shown once: only its hash is kept).")

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("The account name: letters, digits, '.', '_' or '-'.", valueName: "name")) var name: String
    @Option(help: ArgumentHelp("The server's data folder (created if absent).", valueName: "dir")) var data: String
    @Option(help: ArgumentHelp("Storage the account's zones may use: e.g. 500MB, 10GiB, none (the default).", valueName: "size"))
    var quota: String = "none"

    struct Result: Encodable { let account: String; let token: String }

    func run() throws {
        let bytes = try parseQuota(quota)
        let catalog = try ServerCatalog(dataPath: data)
        defer { try? catalog.close() }
        let token = try catalog.addAccount(name, quota: bytes)
        if options.json { return try Output.json(Result(account: name, token: token)) }
        Output.line(token)
        Output.note("created account \(name); keep the token above, it is not stored and cannot be shown again")
    }
}

struct ServerRunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run", abstract: "Serve the sync protocol until SIGINT or SIGTERM, then stop cleanly.")

    @OptionGroup var options: VaultOptions
    @Option(help: ArgumentHelp("The server's data folder (created if absent).", valueName: "dir")) var data: String
    @Option(help: ArgumentHelp("Address to listen on, HOST:PORT (port 0 picks a free one).", valueName: "host:port"))
    var listen: String = "127.0.0.1:8080"

    func run() async throws {
        let (host, port) = try SyncServer.parseListen(listen)
        var logger = Logger(label: "receipt-server")
        logger.logLevel = .warning
        let json = options.json
        let data = self.data
        try await SyncServer.run(dataPath: data, host: host, port: port, logger: logger) { bound in
            if json {
                Output.line("{\"listening\":\"\(host):\(bound)\"}")
            } else {
                Output.note("receipt server listening on http://\(host):\(bound) (data in \(data))")
            }
        }
        if !json { Output.note("receipt server stopped") }
    }
}
