import BlobStore
import Foundation
import ReceiptCatalog

/// A blob address as the manifest import's plan names it (a `BlobID` holds its 32 bytes inline).
typealias Digest = BlobID

extension BlobID {
    init(_ id: BlobID) { self = id }
    var blobID: BlobID { self }
}

/// One checked row with a file: what pass 2 writes.
struct ManifestFile: Sendable {
    let line: Int
    let given: String
    /// The file's real folder: one string shared by all rows of that folder.
    let folder: String
    /// The real path when the row's file is a symbolic link (inside the manifest's folder).
    let link: String?
    /// The `filename` column, when given.
    let filename: String?
    let receipt: Int
    let id: Digest
    let size: Int64
    let mediaType: String
    /// Kept for the stat cache, which only files of `Vault.statCacheMinimum` bytes or more go into.
    let status: FileStatus?
    /// The catalog held the blob when the row was checked.
    let known: Bool
    /// The stat cache already has this file's entry.
    let cached: Bool
    /// The first row of the manifest with this content, which the catalog lacked.
    let firstNew: Bool

    var path: String { link ?? FileSystem.join(folder, Vault.lastComponent(given)) }
    var name: String { filename ?? Vault.lastComponent(given) }
}

/// The checked rows of a manifest, held compactly between the passes: a fixed-size record a row, the
/// paths in one byte buffer, folders and media types once each. A 100,000-row manifest takes about
/// 15 MB here where an array of `ManifestFile` took about 40.
struct ManifestFiles: RandomAccessCollection {
    private struct Row {
        let line: Int
        let receipt: Int
        let id: Digest
        let size: Int64
        let givenEnd: Int
        let folder: Int
        let mediaType: Int
        /// The rare parts (a symbolic link, a `filename`, the status of a large file).
        let extra: Extra?
        let known: Bool
        let cached: Bool
        let firstNew: Bool
    }

    private final class Extra: Sendable {
        let link: String?
        let filename: String?
        let status: FileStatus?

        init(link: String?, filename: String?, status: FileStatus?) {
            self.link = link
            self.filename = filename
            self.status = status
        }
    }

    private var rows: [Row] = []
    private var paths: [UInt8] = []
    private var folders = Interned()
    private var mediaTypes = Interned()

    var startIndex: Int { rows.startIndex }
    var endIndex: Int { rows.endIndex }

    mutating func append(_ f: ManifestFile) {
        paths.append(contentsOf: f.given.utf8)
        let extra = f.link != nil || f.filename != nil || f.status != nil
            ? Extra(link: f.link, filename: f.filename, status: f.status) : nil
        rows.append(Row(line: f.line, receipt: f.receipt, id: f.id, size: f.size, givenEnd: paths.count,
                        folder: folders.index(f.folder), mediaType: mediaTypes.index(f.mediaType), extra: extra,
                        known: f.known, cached: f.cached, firstNew: f.firstNew))
    }

    /// Fields of one row without decoding the rest (its strings).
    func size(_ position: Int) -> Int64 { rows[position].size }
    func known(_ position: Int) -> Bool { rows[position].known }
    func receipt(_ position: Int) -> Int { rows[position].receipt }
    func id(_ position: Int) -> Digest { rows[position].id }
    func firstNew(_ position: Int) -> Bool { rows[position].firstNew }

    subscript(position: Int) -> ManifestFile {
        let row = rows[position]
        let start = position == rows.startIndex ? 0 : rows[position - 1].givenEnd
        return ManifestFile(line: row.line, given: String(decoding: paths[start..<row.givenEnd], as: UTF8.self),
                            folder: folders.values[row.folder], link: row.extra?.link, filename: row.extra?.filename,
                            receipt: row.receipt, id: row.id, size: row.size, mediaType: mediaTypes.values[row.mediaType],
                            status: row.extra?.status, known: row.known, cached: row.cached, firstNew: row.firstNew)
    }
}

/// Strings that repeat across rows (folders, media types, zones), stored once.
private struct Interned {
    var values: [String] = []
    var indexes: [String: Int] = [:]

    mutating func index(_ value: String) -> Int {
        if let known = indexes[value] { return known }
        values.append(value)
        indexes[value] = values.count - 1
        return values.count - 1
    }
}

/// The receipts a manifest describes, held compactly like `ManifestFiles`: a fixed-size record each,
/// the metadata's text in one byte buffer (a receipt changed by a later row of the same id is written
/// again at the end; the old bytes stay unused), zones once each.
struct ManifestReceipts: RandomAccessCollection {
    private struct Row {
        let uuid: UUID
        let firstLine: Int
        let zone: Int
        let metadataStart: Int
        let given: Bool
        let zoneExplicit: Bool
        let exists: Bool
    }

    private var rows: [Row] = []
    private var text: [UInt8] = []
    private var zones = Interned()

    var startIndex: Int { rows.startIndex }
    var endIndex: Int { rows.endIndex }

    mutating func append(_ receipt: ManifestReceipt) { rows.append(encode(receipt)) }

    subscript(position: Int) -> ManifestReceipt {
        get {
            let row = rows[position]
            var metadata = ManifestMetadata()
            var at = row.metadataStart
            for column in ManifestMetadata.columns {
                // Per column: absent (0), or present (1) with its length (LEB128) and UTF-8 bytes.
                let present = text[at] == 1
                at += 1
                guard present else { continue }
                var count = 0
                var shift = 0
                while true {
                    let byte = text[at]
                    at += 1
                    count |= Int(byte & 0x7F) << shift
                    shift += 7
                    if byte < 0x80 { break }
                }
                metadata.values[column] = String(decoding: text[at..<at + count], as: UTF8.self)
                at += count
            }
            return ManifestReceipt(uuid: row.uuid, given: row.given, firstLine: row.firstLine, zone: zones.values[row.zone],
                                   zoneExplicit: row.zoneExplicit, metadata: metadata, exists: row.exists)
        }
        set { rows[position] = encode(newValue) }
    }

    /// The receipt's id was given in the manifest (without decoding the rest).
    func given(_ position: Int) -> Bool { rows[position].given }
    func exists(_ position: Int) -> Bool { rows[position].exists }
    /// `ManifestReceipt.id`, without decoding the metadata.
    func id(_ position: Int) -> String { ReceiptID.text(rows[position].uuid) }
    func zone(_ position: Int) -> String { zones.values[rows[position].zone] }
    func firstLine(_ position: Int) -> Int { rows[position].firstLine }
    /// `ManifestReceipt.key`, without decoding the rest.
    func key(_ position: Int) -> UUIDKey { UUIDKey(rows[position].uuid) }

    private mutating func encode(_ receipt: ManifestReceipt) -> Row {
        let start = text.count
        for column in ManifestMetadata.columns {
            guard let value = receipt.metadata.values[column] else {
                text.append(0)
                continue
            }
            text.append(1)
            // The length in 7-bit groups, low first, the high bit saying more follow: one byte for
            // values under 128 where a fixed 8 bytes took 6 MB of a 100,000-row plan.
            var count = value.utf8.count
            while count >= 0x80 {
                text.append(UInt8(truncatingIfNeeded: count) | 0x80)
                count >>= 7
            }
            text.append(UInt8(count))
            text.append(contentsOf: value.utf8)
        }
        return Row(uuid: receipt.uuid, firstLine: receipt.firstLine, zone: zones.index(receipt.zone), metadataStart: start, given: receipt.given, zoneExplicit: receipt.zoneExplicit, exists: receipt.exists)
    }
}
