import BlobStore
import ArgumentParser
import Foundation
import ReceiptVault
import Logging
import ReceiptServer

struct ServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "server", abstract: "Run a sync server, or manage the accounts, tokens and blobs of its data folder.",
        subcommands: [ServerAccountAddCommand.self, ServerAccountListCommand.self, ServerTokenAddCommand.self,
                      ServerTokenRotateCommand.self, ServerTokenRevokeCommand.self, ServerAccountQuotaCommand.self,
                      ServerAccountRemoveCommand.self, ServerCertCommand.self, ServerGCCommand.self, ServerRunCommand.self,
                      ServerPasswdCommand.self, ServerSessionsRevokeCommand.self,
                      ServerBackupCommand.self, ServerRestoreCommand.self])
}

struct ServerAccountAddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "account-add",
        abstract: "Create an account on a server's data folder and print its token (shown once: only its hash is kept).")

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("The account name: letters, digits, '.', '_' or '-'.", valueName: "name")) var name: String
    @Option(help: ArgumentHelp("The server's data folder (created if absent).", valueName: "dir")) var data: String
    @Option(help: ServerDataOptions.databaseHelp) var database: String?
    @Option(help: ArgumentHelp("Storage the account's zones may use: e.g. 500MB, 10GiB, none (the default).", valueName: "size"))
    var quota: String = "none"

    struct Result: Encodable { let account: String; let token: String }

    func run() async throws {
        let bytes = try parseQuota(quota)
        let token = try await withServerData(data, database: database, create: true) { catalog in try await catalog.addAccount(name, quota: bytes) }
        if options.json { return try Output.json(Result(account: name, token: token)) }
        Output.line(token)
        Output.note("created account \(name); keep the token above, it is not stored and cannot be shown again")
    }
}

struct ServerRunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run", abstract: "Serve the sync protocol until SIGINT or SIGTERM, then stop cleanly.")

    @OptionGroup var options: VaultOptions
    @Option(help: ArgumentHelp("The server's data folder (created if absent; several servers over one --database may share it).", valueName: "dir")) var data: String
    @Option(help: ServerDataOptions.databaseHelp) var database: String?
    @Option(help: ArgumentHelp("Address to listen on, HOST:PORT (port 0 picks a free one).", valueName: "host:port"))
    var listen: String = "127.0.0.1:8080"
    @Option(name: .customLong("tls-cert"), help: ArgumentHelp(
        "Serve HTTPS only, with this PEM certificate (chain, leaf first); SIGHUP reads it and the key again.", valueName: "pem"))
    var tlsCert: String?
    @Option(name: .customLong("tls-key"), help: ArgumentHelp("The PEM private key of --tls-cert.", valueName: "pem"))
    var tlsKey: String?
    @Option(name: .customLong("max-connections"), help: ArgumentHelp(
        "Connections served at once; a further one is closed at once.", valueName: "n"))
    var maxConnections: Int = ServerLimits().maxConnections
    @Option(name: .customLong("max-connections-per-address"), help: ArgumentHelp(
        "Connections served at once from one client address (IPv6: one /64); a further one is closed at once.", valueName: "n"))
    var maxConnectionsPerAddress: Int = ServerLimits().maxConnectionsPerAddress

    func run() async throws {
        let (host, port) = try SyncServer.parseListen(listen)
        guard (1...1_000_000).contains(maxConnections) else {
            throw ValidationError("--max-connections must be a number from 1 to 1000000, not \(maxConnections)")
        }
        guard (1...1_000_000).contains(maxConnectionsPerAddress) else {
            throw ValidationError("--max-connections-per-address must be a number from 1 to 1000000, not \(maxConnectionsPerAddress)")
        }
        guard (tlsCert == nil) == (tlsKey == nil) else {
            throw ValidationError("--tls-cert and --tls-key go together")
        }
        let tls = try tlsCert.map { try TLSIdentity(files: TLSFiles(certificate: $0, key: tlsKey ?? "")) }
        var logger = Logger(label: "receipt-server")
        logger.logLevel = .notice
        let json = options.json
        let data = self.data
        let scheme = tls == nil ? "http" : "https"
        let limits = ServerLimits(maxConnections: maxConnections, maxConnectionsPerAddress: maxConnectionsPerAddress, accessLog: true)
        let database = try ServerDatabase(self.database)
        SQLiteTemporaryFiles.keep(in: data)
        try await SyncServer.run(dataPath: data, database: database, host: host, port: port, limits: limits, tls: tls, logger: logger) { bound in
            if json {
                Output.line("{\"listening\":\"\(host):\(bound)\",\"url\":\"\(scheme)://\(host):\(bound)\"}")
            } else {
                let catalog = if case .postgres(let url) = database { ", catalog in \(url)" } else { "" }
                Output.note("receipt server listening on \(scheme)://\(host):\(bound) (data in \(data)\(catalog))")
            }
        }
        if !json { Output.note("receipt server stopped") }
    }
}

struct ServerCertCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cert",
        abstract: "Make a self-signed TLS certificate for the server, in DIR/tls/cert.pem and DIR/tls/key.pem, and print its SHA-256.",
        discussion: """
            For a household without a CA: run the server with --tls-cert DIR/tls/cert.pem --tls-key DIR/tls/key.pem, \
            and point each vault at it with `receipt remote set https://HOST:PORT ... --pin SHA256`. \
            Valid for 10 years; an existing certificate is replaced (send the server SIGHUP to use the new one).
            """)

    @OptionGroup var options: VaultOptions
    @Option(help: ArgumentHelp("The server's data folder.", valueName: "dir")) var data: String
    @Option(help: ArgumentHelp("A host name or IP address clients use to reach the server (repeatable).", valueName: "name"))
    var host: [String]

    struct Result: Encodable { let cert: String; let key: String; let sha256: String }

    func run() throws {
        guard !host.isEmpty else { throw ValidationError("give at least one --host") }
        for name in host where name.isEmpty || name.contains("/") || name.contains(" ") {
            throw ValidationError("invalid --host '\(name)': give a host name or an IP address")
        }
        let folder = data + "/tls"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let made = try MadeCertificate.make(hosts: host)
        let result = Result(cert: folder + "/cert.pem", key: folder + "/key.pem", sha256: made.sha256)
        try made.write(certificatePath: result.cert, keyPath: result.key)
        if options.json { return try Output.json(result) }
        Output.line(made.sha256)
        Output.note("wrote \(result.cert) and \(result.key) (for \(host.joined(separator: ", "))); clients pin it with "
            + "`receipt remote set https://\(host[0]):PORT --account NAME --token TOKEN --pin \(made.sha256)`")
    }
}

struct ServerGCCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gc",
        abstract: "Delete the blobs no record references and no upload touched within the grace (default 24h).",
        discussion: """
            Safe while the server runs: it refuses nothing meanwhile, and an upload in flight is never \
            collected (docs/DESIGN.md, "Server gc"). Examples: receipt server gc --data DIR --dry-run; \
            receipt server gc --data DIR --grace 1h
            """)

    @OptionGroup var options: VaultOptions
    @OptionGroup var storage: ServerDataOptions
    @Flag(name: .long, help: "Show what would be removed; change nothing.") var dryRun = false
    @Option(name: .long, help: ArgumentHelp("Spare anything uploaded more recently: 0, 30s, 10m, 1h, 2d, 1w.", valueName: "duration"))
    var grace: String = "24h"

    func run() async throws {
        guard let seconds = GraceDuration.seconds(grace) else {
            throw VaultError(.badInput, "invalid --grace '\(grace)': give 0 or a whole number with a unit s, m, h, d or w (e.g. 30s, 10m, 1h, 2d)")
        }
        let report = try await storage.open { catalog in
            try await catalog.collectGarbage(graceSeconds: seconds, dryRun: dryRun)
        }
        if options.json { return try Output.json(report) }
        let verb = dryRun ? "would remove" : "removed"
        if dryRun { for blob in report.blobs { Output.line("\(verb) blob \(blob.sha256)  \(ByteCount.text(blob.bytes))") } }
        Output.line("\(verb) \(report.removedBlobs) blob(s) and \(report.removedInterim) staging file(s), "
            + "\(ByteCount.text(report.reclaimedBytes)) \(dryRun ? "to reclaim" : "reclaimed")")
    }
}
