import BlobStore
import ArgumentParser
import Foundation
import ReceiptServer
import ReceiptVault

/// `receipt server account-list|token-add|token-rotate|token-revoke|account-quota|account-remove`:
/// the life of accounts and their tokens, on a server's data folder (while the server runs, too:
/// every request looks its token up, so a change holds from the next request on).

/// The quota as bytes, nil for none; a clear error for anything else.
func parseQuota(_ text: String) throws -> Int64? {
    guard let parsed = ByteSize.parse(text) else {
        throw VaultError(.badInput, "invalid size '\(text)': give bytes or a number with a unit (500MB, 10GiB), or none")
    }
    return parsed
}

/// Runs `body` on the server's catalog, then closes it: the PostgreSQL one with `database`, else the
/// embedded one in `data` (which must already be a server data folder unless `create`).
func withServerData<T>(_ data: String, database: String?, create: Bool = false,
                       _ body: (any ServerStore) async throws -> T) async throws -> T {
    let where_ = try ServerDatabase(database)
    if where_ == .embedded && !create && !FileManager.default.fileExists(atPath: data + "/" + ServerCatalog.fileName) {
        throw VaultError(.badInput, "\(data) is not a receipt server data folder (it has no \(ServerCatalog.fileName))")
    }
    SQLiteTemporaryFiles.keep(in: data)
    let catalog = try await where_.open(dataPath: data)
    do {
        let result = try await body(catalog)
        try await catalog.close()
        return result
    } catch {
        try? await catalog.close()
        throw error
    }
}

struct TokenResult: Encodable { let account: String; let token: String; let label: String }

func printToken(_ result: TokenResult, json: Bool, note: String) throws {
    if json { return try Output.json(result) }
    Output.line(result.token)
    Output.note(note + "; keep the token above, it is not stored and cannot be shown again")
}

struct ServerAccountListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "account-list",
        abstract: "List the accounts: their token labels (never the tokens), zones, quota and the bytes counted against it.")

    @OptionGroup var options: VaultOptions
    @OptionGroup var storage: ServerDataOptions

    func run() async throws {
        let accounts = try await storage.open { catalog in try await catalog.accounts() }
        if options.json { return try Output.json(accounts) }
        for a in accounts {
            let quota = a.quota.map { "\(ByteCount.text(a.usedBytes)) of \(ByteCount.text($0))" } ?? "\(ByteCount.text(a.usedBytes)), no quota"
            Output.line("\(a.account)  \(quota)  zones: \(a.zones.joined(separator: ", "))  tokens: \(a.tokens.map(\.label).joined(separator: ", "))")
        }
    }
}

struct ServerTokenAddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token-add",
        abstract: "Give an account another token, for one more device (revoked alone if the device is lost).")

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("The account.", valueName: "name")) var name: String
    @Option(help: ArgumentHelp("A name for the device, e.g. phone.", valueName: "label")) var label: String
    @OptionGroup var storage: ServerDataOptions

    func run() async throws {
        let token = try await storage.open { catalog in try await catalog.addToken(account: name, label: label) }
        try printToken(TokenResult(account: name, token: token, label: label), json: options.json,
                       note: "added the token \(label) to the account \(name)")
    }
}

struct ServerTokenRotateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token-rotate",
        abstract: "Replace an account's tokens (or only the one labelled --label) with a new one; the old ones stop working at once.",
        discussion: "Each vault then needs the new token: receipt remote set URL --account NAME --token NEW")

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("The account.", valueName: "name")) var name: String
    @Option(help: ArgumentHelp("Rotate only this device's token.", valueName: "label")) var label: String?
    @OptionGroup var storage: ServerDataOptions

    func run() async throws {
        let token = try await storage.open { catalog in try await catalog.rotateToken(account: name, label: label) }
        let newLabel = label ?? ServerRules.defaultTokenLabel
        try printToken(TokenResult(account: name, token: token, label: newLabel), json: options.json,
                       note: label == nil ? "replaced every token of the account \(name) with the one above"
                                          : "replaced the token \(newLabel) of the account \(name)")
    }
}

struct ServerTokenRevokeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token-revoke", abstract: "Revoke one token of an account; its other tokens keep working.")

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("The account.", valueName: "name")) var name: String
    @Argument(help: ArgumentHelp("The token's label (see account-list).", valueName: "label")) var label: String
    @OptionGroup var storage: ServerDataOptions

    struct Result: Encodable { let account: String; let revoked: String }

    func run() async throws {
        try await storage.open { catalog in try await catalog.revokeToken(account: name, label: label) }
        if options.json { return try Output.json(Result(account: name, revoked: label)) }
        Output.note("revoked the token \(label) of the account \(name)")
    }
}

struct ServerAccountQuotaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "account-quota",
        abstract: "Set the storage an account's zones may use (none: no limit). Uploads and pushes past it are refused (507).")

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("The account.", valueName: "name")) var name: String
    @Argument(help: ArgumentHelp("e.g. 500MB, 10GiB, none.", valueName: "size")) var size: String
    @OptionGroup var storage: ServerDataOptions

    struct Result: Encodable { let account: String; let quota: Int64? }

    func run() async throws {
        let bytes = try parseQuota(size)
        try await storage.open { catalog in try await catalog.setQuota(account: name, bytes: bytes) }
        if options.json { return try Output.json(Result(account: name, quota: bytes)) }
        Output.note("the quota of the account \(name) is now \(bytes.map { ByteCount.text($0) } ?? "none")")
    }
}

struct ServerAccountRemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "account-remove",
        abstract: "Remove an account, its tokens, its zones and its shares in others' zones.",
        discussion: "Refused while the account owns zones shared with other accounts, unless --delete-zones.")

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("The account.", valueName: "name")) var name: String
    @Flag(help: "Also delete its zones that are shared with others (for every participant).") var deleteZones = false
    @OptionGroup var storage: ServerDataOptions

    func run() async throws {
        let removed = try await storage.open { catalog in try await catalog.removeAccount(name, deleteZones: deleteZones) }
        if options.json { return try Output.json(removed) }
        Output.note("removed the account \(name): \(removed.deletedZones.count) zone(s), \(removed.removedShares) share(s) "
            + "in others' zones, \(removed.revokedTokens) token(s)")
    }
}
