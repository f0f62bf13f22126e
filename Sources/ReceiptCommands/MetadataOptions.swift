import ArgumentParser
import ReceiptVault

/// Metadata flags shared by import and edit.
struct MetadataOptions: ParsableArguments {
    @Option(help: "Merchant name.") var merchant: String?
    @Option(help: ArgumentHelp("Receipt date.", valueName: "YYYY-MM-DD")) var date: String?
    /// The next argument whatever it looks like: `--total -5` is minus five, not an unknown option `-5`.
    @Option(parsing: .unconditional, help: ArgumentHelp("Total as a decimal amount (a refund is negative: -5).", valueName: "12.34"))
    var total: String?
    @Option(help: ArgumentHelp("ISO 4217 currency code.", valueName: "CUR")) var currency: String?
    @Option(help: "Category, such as health or tax.") var category: String?
    @Option(help: "Free-text note.") var note: String?

    var metadata: ReceiptMetadata {
        ReceiptMetadata(merchant: merchant, date: date, total: total, currency: currency, category: category, note: note)
    }
}
