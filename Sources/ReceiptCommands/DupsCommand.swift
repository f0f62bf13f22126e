import ArgumentParser
import Foundation
import ReceiptVault

struct DupsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dups",
        abstract: "List receipts that may be one receipt entered twice.",
        discussion: """
            Two receipts of one zone are grouped when their texts are near-identical (same-text: a \
            re-scan or a second photo of the same paper, compared by a signature of their words), or \
            when their merchant, date and total are equal and one of them has no text to tell them \
            apart (same-fields). Two receipts of one shop, day and amount whose texts differ are two \
            purchases and are not grouped. Nothing is removed or changed: keep both with \
            `receipt dups keep ID ID`, remove one with `receipt rm ID`, or merge by attaching the \
            other's file (`receipt cat ID > FILE`, `receipt attach KEEP FILE`) and then removing it. \
            --json: [{"receipts": [ID, …], "reason": "same-text"|"same-fields"}].
            """,
        subcommands: [DupsKeepCommand.self])

    @OptionGroup var options: VaultOptions
    @Option(help: "Only this zone.") var zone: String?

    func run() throws {
        // Opened for writing: the signatures of texts read before `dups` existed are made first.
        let groups = try options.openVault().duplicateGroups(zone: zone)
        if options.json { return try Output.json(groups) }
        if groups.isEmpty { return Output.line("no possible duplicates") }
        for group in groups {
            Output.line("\(group.reason.padding(toLength: 12, withPad: " ", startingAt: 0)) "
                + group.receipts.map(\.short).joined(separator: "  "))
        }
    }
}

struct DupsKeepCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keep",
        abstract: "Keep receipts as distinct purchases: `dups` and `import` no longer pair them.",
        discussion: "Example: receipt dups keep 1f2e3d4c 9a8b7c6d")

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("Two or more receipt ids or prefixes.", valueName: "id")) var ids: [String]

    func run() throws {
        try options.openVault().keepApart(ids)
        if !options.json { Output.line("kept apart: " + ids.joined(separator: ", ")) }
    }
}
