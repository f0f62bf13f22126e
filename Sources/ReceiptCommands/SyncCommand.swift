import ArgumentParser
import Foundation
import ReceiptSync

struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Push local changes and pull remote ones, for every zone the account can see.")

    @OptionGroup var options: VaultOptions
    @Option(help: ArgumentHelp("Only this zone (its local name).", valueName: "zone")) var zone: String?

    func run() async throws {
        let vault = try options.openVault()
        defer { try? vault.close() }
        guard let remote = try RemoteConfig.load(vault) else {
            throw SyncError("this vault has no remote: run `receipt remote set URL --account NAME --token TOKEN` first")
        }
        let terminal = Output.stderrIsTerminal
        let engine = try SyncEngine(vault: vault, remote: remote) { message in
            // One line, rewritten in place.
            if terminal { FileHandle.standardError.write(Data(("\r\u{1B}[Ksync: " + message).utf8)) }
        }
        defer { if terminal { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) } }
        let report: SyncReport
        do {
            report = try await engine.run(zone: zone)
        } catch let error as SyncError {
            // Whatever committed before the failure stays committed; the next sync resumes.
            throw ProblemsExit(message: error.message)
        }
        if options.json {
            try Output.json(report)
        } else {
            Output.note("pushed \(report.pushed), pulled \(report.pulled), uploaded \(report.blobsUploaded) blob(s), "
                        + "downloaded \(report.blobsDownloaded), merged \(report.conflicts) conflict(s)")
        }
        if let first = report.errors.first {
            for more in report.errors.dropFirst() { Output.note("receipt: " + more) }
            throw ProblemsExit(message: first)
        }
    }
}
