import ArgumentParser
import Foundation
import ReceiptVault
#if canImport(Glibc)
import Glibc
#endif

struct ReviewCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "review",
        abstract: "Review the fields read from receipts' text: accept, correct or skip each.",
        discussion: """
            After `import` or `index` extracts a receipt's text, the fields it left blank are filled \
            when the text makes them certain, else suggested. On a terminal, each receipt is shown with \
            the line of its text each field came from: a accepts every field shown, c corrects one \
            (FIELD=VALUE), s skips, q quits. Without a terminal, or with --json, the receipts to review \
            are listed (--json: the `list` shape, with "filled" and "suggestions"). \
            `receipt review accept ID [--fields merchant,date]` confirms filled fields and takes \
            suggestions. A merchant renamed or accepted is remembered for that receipt header; a date \
            order confirmed for a merchant is used for its next receipts.
            """,
        subcommands: [ReviewAcceptCommand.self])

    @OptionGroup var options: VaultOptions
    @Option(help: "Only this zone.") var zone: String?

    func run() throws {
        let interactive = !options.json && isatty(0) == 1 && isatty(1) == 1
        let vault = interactive ? try options.openVault() : try options.openVaultForReading()
        let out = BufferedOutput()
        defer { out.flush() }
        if options.json {
            let encoder = Output.jsonEncoder()
            var first = true
            try vault.forEachToReview(zone: zone) { receipt in
                try out.jsonElement(receipt, first: first, encoder: encoder)
                first = false
            }
            return out.endJSONArray(empty: first)
        }
        var queue: [ReceiptView] = []
        try vault.forEachToReview(zone: zone) { interactive ? queue.append($0) : out.line(summary($0)) }
        guard interactive else { return }
        if queue.isEmpty { return Output.line("nothing to review") }
        for (index, receipt) in queue.enumerated() {
            guard try reviewOne(vault, receipt, position: "\(index + 1)/\(queue.count)") else { return }
        }
    }

    /// Shows one receipt's readings and takes a keystroke; false when the person quits.
    func reviewOne(_ vault: Vault, _ receipt: ReceiptView, position: String) throws -> Bool {
        var receipt = receipt
        while true {
            Output.line("")
            Output.line("[\(position)] \(receipt.id)  \(receipt.attachments.first?.filename ?? "")")
            for name in receipt.filled {
                Output.line("  \(name.padding(toLength: 9, withPad: " ", startingAt: 0)) \(value(name, receipt) ?? "-")  (filled)")
            }
            for (name, s) in receipt.suggestions.sorted(by: { $0.key < $1.key }) {
                Output.line("  \(name.padding(toLength: 9, withPad: " ", startingAt: 0)) \(s.value)?  (suggested, \(Int(s.confidence * 100)) %)")
                Output.line("            from: \(s.line)")
            }
            Output.write("a accept all  c correct  s skip  q quit > ")
            switch readKey() {
            case "a":
                Output.line("a")
                _ = try vault.acceptReading(receipt.id)
                return true
            case "c":
                Output.line("c")
                Output.write("FIELD=VALUE (merchant, date, total, currency): ")
                guard let answer = readLine(), let equals = answer.firstIndex(of: "=") else { continue }
                let field = String(answer[..<equals]).trimmingCharacters(in: .whitespaces)
                let text = String(answer[answer.index(after: equals)...]).trimmingCharacters(in: .whitespaces)
                do {
                    receipt = try vault.edit(receipt.id, try metadata(field, text))
                } catch {
                    Output.note("receipt: " + Failure.describe(error).message)
                }
                if receipt.filled.isEmpty && receipt.suggestions.isEmpty { return true }
            case "s", "\n":
                Output.line("s")
                return true
            case "q", nil:
                Output.line("")
                return false
            default:
                continue
            }
        }
    }

    func value(_ name: String, _ r: ReceiptView) -> String? {
        ["merchant": r.merchant, "date": r.date, "total": r.total, "currency": r.currency][name] ?? nil
    }

    func metadata(_ field: String, _ value: String) throws -> ReceiptMetadata {
        switch field.lowercased() {
        case "merchant": return ReceiptMetadata(merchant: value)
        case "date": return ReceiptMetadata(date: value)
        case "total": return ReceiptMetadata(total: value)
        case "currency": return ReceiptMetadata(currency: value)
        default: throw ValidationError("unknown field '\(field)': give merchant, date, total or currency")
        }
    }

    /// One keystroke from the terminal, without waiting for Enter.
    func readKey() -> Character? {
        var saved = termios()
        guard tcgetattr(0, &saved) == 0 else { return readLine().flatMap(\.first) }
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        tcsetattr(0, TCSANOW, &raw)
        defer { tcsetattr(0, TCSANOW, &saved) }
        var byte: UInt8 = 0
        guard read(0, &byte, 1) == 1 else { return nil }
        return Character(Unicode.Scalar(byte))
    }
}

struct ReviewAcceptCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accept",
        abstract: "Confirm a receipt's filled fields and take its suggestions.",
        discussion: "Example: receipt review accept 1f2e3d4c --fields merchant,total")

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("Receipt id or prefix.", valueName: "id")) var id: String
    @Option(help: ArgumentHelp("Only these fields (default: every filled and suggested one).", valueName: "F,…"))
    var fields: String?

    func run() throws {
        let names = fields.map { $0.split(separator: ",").map(String.init) }
        let receipt = try options.openVault().acceptReading(id, fields: names)
        if options.json { return try Output.json(receipt) }
        describe(receipt)
    }
}

struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Show or change the vault's settings.",
        discussion: """
            `receipt config locale LOCALE` (en-US, de-DE, en-MY, …) says in which order a receipt's \
            ambiguous date (03/04/2025) is read when the receipt itself does not settle it: month first \
            for the US, day first elsewhere. `receipt config` alone prints the settings (--json: an object).
            """)

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("The setting to change: locale.", valueName: "name")) var name: String?
    @Argument(help: ArgumentHelp("Its new value.", valueName: "value")) var value: String?

    func run() throws {
        guard let name else {
            let settings = try options.openVaultForReading().configuration()
            if options.json { return try Output.json(settings) }
            for (key, value) in settings.sorted(by: { $0.key < $1.key }) { Output.line("\(key) = \(value)") }
            return
        }
        guard name == "locale" else { throw ValidationError("unknown setting '\(name)': the settings are: locale") }
        guard let value else { throw ValidationError("give the locale, e.g. `receipt config locale en-US`") }
        let vault = try options.openVault()
        try vault.setLocale(value)
        if options.json { return try Output.json(try vault.configuration()) }
        Output.line("locale = \(value)")
    }
}
