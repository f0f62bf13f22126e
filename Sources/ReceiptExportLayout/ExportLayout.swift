import BlobStore
import CSV
import Foundation
import MediaTypes
import ReceiptWire

/// Who an export is for: `plain` (folders by month) or `claim`, a package an accountant or insurer
/// accepts (numbered files, index.csv, summary.txt, SHA256SUMS; see ClaimPackage.swift).
public enum ExportPurpose: String, Sendable, CaseIterable {
    case plain, claim
}

public struct ExportFailure: Codable, Sendable, Equatable {
    public var receipt: String
    public var sha256: String
    public var error: String

    public init(receipt: String, sha256: String, error: String) {
        self.receipt = receipt
        self.sha256 = sha256
        self.error = error
    }
}

/// One attachment to export: where it goes and what it is.
public struct ExportItem: Sendable {
    public let receipt: String
    public let sha256: String
    public let size: Int64
    /// Its path in the export (`ExportLayout.exportItems`).
    public let name: String
}

/// How an export lays its files out, written once for the vault's `export` (a folder or a zip) and the
/// server's web download (a zip): the attachments' names, `manifest.csv`, `receipts.json`, and for
/// a claim package `index.csv`, `summary.txt` and `SHA256SUMS` (ClaimPackage.swift).
public enum ExportLayout {
    public static let manifestName = "manifest.csv"
    public static let listName = "receipts.json"

    /// Deflate pays for text; PDFs, images and archives are mostly compressed already.
    static func compressible(_ name: String) -> Bool {
        ["txt", "csv", "json", "html", "htm", "xml", "eml"].contains(extensionOf(name) ?? "")
    }

    // MARK: - Names, manifest, listing

    /// Where each attachment of `receipts` (in `list` order) goes in an export for `purpose`.
    public static func exportItems(_ receipts: [ReceiptView], for purpose: ExportPurpose) -> [ExportItem] {
        purpose == .claim ? claimNames(receipts) : exportNames(receipts)
    }

    /// A safe relative path for every attachment: `YYYY/MM/YYYY-MM-DD_merchant_idprefix[_n].ext`, or
    /// `undated/merchant_idprefix[_n].ext`. Only `[a-z0-9._-]` and `/` between the generated folders;
    /// names are unique (case-insensitively).
    package static func exportNames(_ receipts: [ReceiptView]) -> [ExportItem] {
        var taken = Set<String>([manifestName, listName])
        var items: [ExportItem] = []
        for r in receipts {
            let day = r.date.flatMap { try? ReceiptFields.date($0) }
            let folder = day.map { "\($0.prefix(4))/\($0.dropFirst(5).prefix(2))" } ?? "undated"
            let idPart = slug(String(r.id.prefix(8)), fallback: "receipt")
            for (n, a) in r.attachments.enumerated() {
                let stem = (day.map { $0 + "_" } ?? "") + nameSlug(r, a) + "_" + idPart
                let ext = safeExtension(a.filename, mediaType: a.mediaType)
                let numbered = r.attachments.count > 1 ? "\(stem)_\(n + 1)" : stem
                var name = "\(folder)/\(numbered).\(ext)"
                var k = 2
                while taken.contains(name.lowercased()) {
                    name = "\(folder)/\(numbered)-\(k).\(ext)"
                    k += 1
                }
                taken.insert(name.lowercased())
                items.append(ExportItem(receipt: r.id, sha256: a.sha256, size: a.size, name: name))
            }
        }
        return items
    }

    /// The merchant's name, or for a receipt without one the attachment's original file name (its
    /// stem): `changelog_fff64f7a.pdf`, never a bare `receipt_fff64f7a.pdf`.
    static func nameSlug(_ r: ReceiptView, _ a: ReceiptView.File) -> String {
        let merchant = slug(r.merchant ?? "", fallback: "")
        if !merchant.isEmpty { return merchant }
        let last = FileSystem.lastComponent(a.filename)
        let stem = last.lastIndex(of: ".").map { $0 == last.startIndex ? last : String(last[..<$0]) } ?? last
        return slug(stem, fallback: "receipt")
    }

    /// Lowercase ASCII letters and digits, runs of anything else turned into one `-`, at most 40
    /// characters; diacritics folded (Café → cafe).
    static func slug(_ text: String, fallback: String) -> String {
        let folded = text.folding(options: [.diacriticInsensitive, .caseInsensitive], locale: nil)
        var out = ""
        var dash = false
        for scalar in folded.unicodeScalars {
            if scalar.isASCII && CharacterSet.alphanumerics.contains(scalar) {
                if dash && !out.isEmpty { out.append("-") }
                dash = false
                out.append(Character(String(scalar).lowercased()))
                if out.count >= 40 { break }
            } else {
                dash = true
            }
        }
        return out.isEmpty ? fallback : out
    }

    static func extensionOf(_ name: String) -> String? {
        let last = FileSystem.lastComponent(name)
        guard let dot = last.lastIndex(of: "."), dot != last.startIndex else { return nil }
        let ext = last[last.index(after: dot)...].lowercased()
        guard (1...8).contains(ext.count), ext.unicodeScalars.allSatisfy({ $0.isASCII && CharacterSet.alphanumerics.contains($0) })
        else { return nil }
        return ext
    }

    static func safeExtension(_ filename: String, mediaType: String) -> String {
        extensionOf(filename) ?? MediaType.fileExtension(for: mediaType) ?? "bin"
    }

    /// `manifest.csv`: one row per exported attachment (paths relative to the export), and one row
    /// without path for a receipt that has no attachment, so every receipt comes back on import.
    /// Cells a spreadsheet would run are written as text (`SpreadsheetCell`); import reads them back.
    static func exportManifest(_ receipts: [ReceiptView], items: [ExportItem], failures: [ExportFailure]) throws -> Data {
        let failed = Set(failures.map { $0.receipt + "/" + $0.sha256 })
        let stream = OutputStream(toMemory: ())
        let columns: [ManifestColumn] = [.path, .id, .zone, .date, .merchant, .total, .currency, .category, .note,
                                         .tags, .filename, .sha256, .status, .claim, .reimbursedOn]
        do {
            let writer = try CSVWriter(stream: stream, newline: .crlf)
            try writer.write(row: columns.map(\.rawValue))
            var byReceipt: [String: [ExportItem]] = [:]
            for item in items where !failed.contains(item.receipt + "/" + item.sha256) {
                byReceipt[item.receipt, default: []].append(item)
            }
            for r in receipts {
                func row(_ path: String, _ filename: String, _ sha256: String) -> [String] {
                    columns.map { c in
                        switch c {
                        case .path: return path
                        case .id: return r.id
                        case .zone: return r.zone
                        case .date: return r.date ?? ""
                        case .merchant: return r.merchant ?? ""
                        case .total: return r.total ?? ""
                        case .currency: return r.currency ?? ""
                        case .category: return r.category ?? ""
                        case .note: return r.note ?? ""
                        case .tags: return r.tags.joined(separator: ";")
                        case .filename: return filename
                        case .sha256: return sha256
                        case .status: return r.status
                        case .claim: return r.claim ?? ""
                        case .reimbursedOn: return r.reimbursedOn ?? ""
                        }
                    }
                }
                let files = byReceipt[r.id] ?? []
                if files.isEmpty { try writer.write(row: row("", "", "").map(SpreadsheetCell.written)) }
                for item in files {
                    guard let a = r.attachments.first(where: { $0.sha256 == item.sha256 }) else { continue }
                    try writer.write(row: row(item.name, a.filename, a.sha256).map(SpreadsheetCell.written))
                }
            }
            writer.stream.close()
        } catch {
            throw ExportError("cannot write the export's manifest: \(error)")
        }
        guard var data = stream.property(forKey: .dataWrittenToMemoryStreamKey) as? Data else {
            throw ExportError("cannot write the export's manifest")
        }
        data.append(contentsOf: [0x0D, 0x0A])
        return data
    }

    /// `receipts.json`: the `list --json` shape.
    static func exportListing(_ receipts: [ReceiptView]) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        var data = try encoder.encode(receipts)
        data.append(0x0A)
        return data
    }
}
