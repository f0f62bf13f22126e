import BlobStore
import Foundation
import ReceiptWire

/// `export --for claim`: a package an accountant or insurer accepts. Files numbered in date order
/// (`001_2025-03-04_cvs-pharmacy.pdf`, undated receipts last as `NNN_undated_…`), `index.csv` (one row
/// per file), `summary.txt` (counts and exact totals per currency), and `SHA256SUMS` over every
/// other file, which `sha256sum -c SHA256SUMS` accepts in the package's folder. The usual
/// `manifest.csv` and `receipts.json` are there too, so the package re-imports.
extension ExportLayout {
    public static let claimIndexName = "index.csv"
    public static let claimSummaryName = "summary.txt"
    public static let claimSumsName = "SHA256SUMS"

    /// Flat numbered names; `receipts` come in date order (undated last) from `list`.
    static func claimNames(_ receipts: [ReceiptView]) -> [ExportItem] {
        let count = receipts.reduce(0) { $0 + $1.attachments.count }
        let width = max(3, String(count).count)
        var items: [ExportItem] = []
        // The number makes every name unique, and no name of the package's own files starts with a digit.
        for r in receipts {
            let day = r.date.flatMap { try? ReceiptFields.date($0) } ?? "undated"
            for a in r.attachments {
                let number = String(items.count + 1)
                let padded = String(repeating: "0", count: max(0, width - number.count)) + number
                let name = "\(padded)_\(day)_\(nameSlug(r, a)).\(safeExtension(a.filename, mediaType: a.mediaType))"
                items.append(ExportItem(receipt: r.id, sha256: a.sha256, size: a.size, name: name))
            }
        }
        return items
    }

    /// The files written after the attachments: manifest.csv and receipts.json, and for a claim
    /// package index.csv, summary.txt and SHA256SUMS (which lists all the others).
    package static func closingFiles(_ receipts: [ReceiptView], items: [ExportItem], failures: [ExportFailure],
                             purpose: ExportPurpose) throws -> [(String, Data)] {
        var files = [(manifestName, try exportManifest(receipts, items: items, failures: failures)),
                     (listName, try exportListing(receipts))]
        guard purpose == .claim else { return files }
        let failed = Set(failures.map { $0.receipt + "/" + $0.sha256 })
        let written = items.filter { !failed.contains($0.receipt + "/" + $0.sha256) }
        files.append((claimIndexName, try claimIndex(receipts, items: written)))
        files.append((claimSummaryName, claimSummary(receipts, files: written.count, failed: failures.count)))
        // Attachments are named by their address already: their hash is the one the vault verified.
        var sums = written.map { "\($0.sha256)  \($0.name)\n" }
        for (name, data) in files {
            let hasher = SHA256Hasher()
            data.withUnsafeBytes { hasher.update($0) }
            sums.append("\(hasher.finalize().hex)  \(name)\n")
        }
        files.append((claimSumsName, Data(sums.joined().utf8)))
        return files
    }

    /// One row per file: number, date, merchant, total, currency, category, status, claim, file, sha256.
    /// A receipt's total is on its first file's row only, so the column sums to the package's total.
    static func claimIndex(_ receipts: [ReceiptView], items: [ExportItem]) throws -> Data {
        let byID = Dictionary(receipts.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        var rows = [["number", "date", "merchant", "total", "currency", "category", "status", "claim", "file", "sha256"]]
        var totalled = Set<String>()
        for item in items {
            guard let r = byID[item.receipt] else { continue }
            let number = String(item.name.prefix(while: { $0 != "_" }))
            let total = totalled.insert(r.id).inserted ? r.total ?? "" : ""
            rows.append([number, r.date ?? "", r.merchant ?? "", total, r.currency ?? "", r.category ?? "",
                         r.status, r.claim ?? "", item.name, item.sha256])
        }
        return try SpreadsheetCell.csvData(rows, what: "the package's index.csv")
    }

    /// Counts and exact totals per currency, and the receipts without a total, as plain text.
    static func claimSummary(_ receipts: [ReceiptView], files: Int, failed: Int) -> Data {
        var sums: [String: (count: Int, sum: ExactSum)] = [:]
        var withoutTotal = 0
        for r in receipts {
            guard let total = r.total else { withoutTotal += 1; continue }
            var entry = sums[r.currency ?? "(no currency)"] ?? (0, ExactSum())
            entry.count += 1
            entry.sum.add(total)
            sums[r.currency ?? "(no currency)"] = entry
        }
        let dates = receipts.compactMap(\.date).sorted()
        var lines = ["Receipts: \(receipts.count)", "Files: \(files)" + (failed > 0 ? " (\(failed) could not be read)" : "")]
        if let first = dates.first, let last = dates.last { lines.append("Dates: \(first) to \(last)") }
        lines.append("")
        lines.append("Totals per currency:")
        for (currency, entry) in sums.sorted(by: { $0.key < $1.key }) {
            lines.append("  \(currency) \(entry.sum.text)  (\(entry.count) receipt\(entry.count == 1 ? "" : "s"))")
        }
        if sums.isEmpty { lines.append("  none") }
        lines.append("Receipts without a total: \(withoutTotal)")
        lines.append("")
        lines.append("Check the files with: sha256sum -c SHA256SUMS")
        return Data((lines.joined(separator: "\n") + "\n").utf8)
    }
}
