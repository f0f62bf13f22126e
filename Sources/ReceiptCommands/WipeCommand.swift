import ArgumentParser
import ReceiptSync

struct WipeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wipe",
        abstract: "Delete the vault's local data, after stopping any sync of it (--remote: also your zones on the server).")

    @OptionGroup var options: VaultOptions
    @Flag(help: "Also delete this account's own zones on the server.") var remote = false
    @Flag(help: "Confirm: without it nothing is deleted.") var yes = false

    func validate() throws {
        if !yes { throw ValidationError("wipe deletes the vault at \(options.vaultPath): add --yes to confirm") }
    }

    func run() async throws {
        let report = try await Wipe.run(vaultPath: options.vaultPath, remote: remote)
        if options.json { return try Output.json(report) }
        Output.note("wiped \(report.vault)" + (report.remoteZones.isEmpty ? "" : " and deleted \(report.remoteZones.joined(separator: ", ")) on the server"))
    }
}
