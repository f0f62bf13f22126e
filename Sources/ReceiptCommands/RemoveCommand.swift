import ArgumentParser
import BlobStore
import ReceiptVault

struct RemoveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm", abstract: "Delete receipts (their blobs stay until gc finds them unreferenced).")

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("Receipt ids or prefixes.", valueName: "id")) var ids: [String]

    struct Result: Encodable { let removed: [ReceiptID] }

    func validate() throws {
        if ids.isEmpty { throw ValidationError("give the receipts to delete") }
    }

    func run() throws {
        let removed = try options.openVault().remove(ids)
        if options.json { return try Output.json(Result(removed: removed)) }
        Output.note("removed \(removed.count) receipt(s)")
    }
}
