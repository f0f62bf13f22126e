import BlobStore
import ArgumentParser
import ReceiptVault

struct StatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "stats", abstract: "Counts and bytes.")

    @OptionGroup var options: VaultOptions

    func run() throws {
        let s = try options.openVaultForReading().stats()
        if options.json { return try Output.json(s) }
        Output.line("receipts:       \(s.receipts)")
        Output.line("attachments:    \(s.attachments)")
        Output.line("blobs:          \(s.blobs) (\(s.externalBlobs) files, \(s.inlineBlobs) inline)")
        Output.line("logical bytes:  \(s.logicalBytes) (\(ByteCount.text(s.logicalBytes)))")
        Output.line("stored bytes:   \(s.storedBytes) (\(ByteCount.text(s.storedBytes)))")
        Output.line("text indexed:   \(s.indexedBlobs) blobs, \(s.pendingIndex) pending (receipt index)")
    }
}
