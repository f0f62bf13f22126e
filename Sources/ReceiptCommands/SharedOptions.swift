import ArgumentParser
import ReceiptCatalog
import ReceiptServer
import ReceiptVault

/// The flags that narrow `search`, `report` and `export` to some receipts, declared once so their
/// names and help stay the same everywhere. (`list` declares its own: its `--merchant` sits among
/// them in its help, which a group cannot interleave.)
struct ScopeOptions: ParsableArguments {
    @Option(help: "Only this zone.") var zone: String?
    @Option(help: ArgumentHelp("Only dated on or after.", valueName: "YYYY-MM-DD")) var from: String?
    @Option(help: ArgumentHelp("Only dated on or before.", valueName: "YYYY-MM-DD")) var to: String?
    @Option(help: "Only this category (case-insensitive).") var category: String?
    @Option(help: ArgumentHelp("Only receipts whose claim stands so.", valueName: "none|submitted|reimbursed|denied"))
    var status: String?

    var scope: ReceiptScope { ReceiptScope(zone: zone, from: from, to: to, category: category, status: status) }
}

/// A server command's storage: the data folder and, optionally, the PostgreSQL database that holds
/// its catalog instead. `run` and `account-add` declare their own `--data` (its help says it is
/// created) beside `databaseHelp`.
struct ServerDataOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The server's data folder.", valueName: "dir")) var data: String
    @Option(help: ServerDataOptions.databaseHelp) var database: String?

    static var databaseHelp: ArgumentHelp {
        ArgumentHelp("Keep accounts, zones and records in this PostgreSQL database instead of the data folder's embedded catalog (blobs stay in --data).",
                     valueName: "postgres://user@host/db")
    }

    /// Runs `body` on the server's catalog, then closes it (`withServerData`).
    func open<T>(_ body: (any ServerStore) async throws -> T) async throws -> T {
        try await withServerData(data, database: database, body)
    }
}
