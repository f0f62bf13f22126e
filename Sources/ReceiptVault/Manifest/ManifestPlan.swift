import BlobStore
import Foundation
import ReceiptCatalog

/// A blob address as the manifest import's plan names it (a `BlobID` holds its 32 bytes inline).
typealias Digest = BlobID

extension BlobID {
    init(_ id: BlobID) { self = id }
    var blobID: BlobID { self }
}

/// One checked row with a file: what pass 2 writes. A class: pass 2's batches, their rows' outcomes
/// and the report of a batch refer to one copy rather than each holding its own.
final class ManifestFile: Sendable {
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

    init(line: Int, given: String, folder: String, link: String?, filename: String?, receipt: Int, id: Digest,
         size: Int64, mediaType: String, status: FileStatus?, known: Bool, cached: Bool, firstNew: Bool) {
        self.line = line
        self.given = given
        self.folder = folder
        self.link = link
        self.filename = filename
        self.receipt = receipt
        self.id = id
        self.size = size
        self.mediaType = mediaType
        self.status = status
        self.known = known
        self.cached = cached
        self.firstNew = firstNew
    }

    var path: String { link ?? FileSystem.join(folder, FileSystem.lastComponent(given)) }
    var name: String { filename ?? FileSystem.lastComponent(given) }
}

/// A row of pass 2, read back from the plan in manifest order: a row with a file, or (first) a receipt
/// the manifest gives no file. Carries what the batch's transaction and the report need, so that
/// neither asks the plan again. A class, for the same reason as `ManifestFile`: a batch's 16,384 rows
/// are in several of the ingest path's arrays at once, and two batches are in flight.
final class PlannedRow: Sendable {
    /// nil: a receipt without file.
    let file: ManifestFile?
    /// The receipt's index in the plan.
    let receipt: Int
    /// Its metadata only when `first` (the receipt's first row, where it is written, or remembered
    /// until a later row writes it): decoding it for every row would cost more than it serves.
    let planned: ManifestReceipt
    /// The receipt's first and last rows with a file (both for a receipt without file).
    let first, last: Bool

    init(file: ManifestFile?, receipt: Int, planned: ManifestReceipt, first: Bool, last: Bool) {
        self.file = file
        self.receipt = receipt
        self.planned = planned
        self.first = first
        self.last = last
    }
}

/// The checked plan of a manifest, between the passes: in a SQLite file of its own
/// (`ManifestPlanFile`), so a million rows take its page cache rather than 400 MB. Pass 1 appends
/// receipts and files and asks two indexes — the receipts by given id (rows sharing an id form one
/// receipt) and the contents seen (the first row of each new content brings its bytes) — and pass 2
/// reads the rows back in manifest order (`next`).
final class ManifestPlan {
    let file: ManifestPlanFile
    private(set) var receiptCount = 0
    private(set) var fileCount = 0
    var newZones: [String] = []
    var bytes: Int64 = 0

    private let insertReceipt, updateReceipt, selectReceipt, insertID, selectID, insertFile, noteFile, insertContent: PlanStatement
    private var reading: (statement: PlanStatement, files: Bool)?
    private var finished = false
    /// The folder of the row read before: the next rows of that folder share its string.
    private var lastFolder: String?

    init(interim: String) throws {
        file = try ManifestPlanFile(interim: interim)
        try file.execute("""
            CREATE TABLE receipts (n INTEGER PRIMARY KEY, uuid BLOB NOT NULL, given INTEGER NOT NULL,
                firstLine INTEGER NOT NULL, zone TEXT NOT NULL, zoneExplicit INTEGER NOT NULL, present INTEGER NOT NULL,
                metadata BLOB NOT NULL, firstFile INTEGER, lastFile INTEGER);
            CREATE TABLE ids (uuid BLOB PRIMARY KEY, receipt INTEGER NOT NULL) WITHOUT ROWID;
            CREATE TABLE files (n INTEGER PRIMARY KEY, line INTEGER NOT NULL, given TEXT NOT NULL, folder TEXT NOT NULL,
                link TEXT, filename TEXT, receipt INTEGER NOT NULL, digest BLOB NOT NULL, size INTEGER NOT NULL,
                mediaType TEXT NOT NULL, mode INTEGER, inode INTEGER, device INTEGER, mtime INTEGER,
                known INTEGER NOT NULL, cached INTEGER NOT NULL, firstNew INTEGER NOT NULL);
            CREATE TABLE contents (digest BLOB PRIMARY KEY) WITHOUT ROWID;
            BEGIN;
            """)
        insertReceipt = try file.prepare("""
            INSERT INTO receipts(n, uuid, given, firstLine, zone, zoneExplicit, present, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """)
        updateReceipt = try file.prepare("UPDATE receipts SET zone = ?, zoneExplicit = ?, metadata = ? WHERE n = ?")
        selectReceipt = try file.prepare(
            "SELECT uuid, given, firstLine, zone, zoneExplicit, present, metadata FROM receipts WHERE n = ?")
        insertID = try file.prepare("INSERT INTO ids(uuid, receipt) VALUES (?, ?)")
        selectID = try file.prepare("SELECT receipt FROM ids WHERE uuid = ?")
        insertFile = try file.prepare("""
            INSERT INTO files(n, line, given, folder, link, filename, receipt, digest, size, mediaType, mode, inode, device,
                              mtime, known, cached, firstNew) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        noteFile = try file.prepare("UPDATE receipts SET firstFile = coalesce(firstFile, ?1), lastFile = ?1 WHERE n = ?2")
        insertContent = try file.prepare("INSERT OR IGNORE INTO contents(digest) VALUES (?)")
    }

    func close() { file.close() }

    // MARK: Pass 1

    /// Adds a receipt; returns its index.
    func append(_ r: ManifestReceipt) throws -> Int {
        let n = receiptCount
        try insertReceipt.run {
            $0.int(n)
            $0.uuid(r.uuid)
            $0.bool(r.given)
            $0.int(r.firstLine)
            $0.text(r.zone)
            $0.bool(r.zoneExplicit)
            $0.bool(r.exists)
            $0.blob(Self.encode(r.metadata))
        }
        if r.given {
            try insertID.run {
                $0.uuid(r.uuid)
                $0.int(n)
            }
        }
        receiptCount += 1
        return n
    }

    /// The receipt a given id names, when an earlier row gave it.
    func receipt(given uuid: UUID) throws -> Int? {
        selectID.bind { $0.uuid(uuid) }
        defer { selectID.reset() }
        return try selectID.step() ? selectID.int(0) : nil
    }

    func receipt(_ n: Int) throws -> ManifestReceipt {
        selectReceipt.bind { $0.int(n) }
        defer { selectReceipt.reset() }
        guard try selectReceipt.step() else { throw VaultError(.io, "the manifest import's plan lost receipt \(n)") }
        return Self.receipt(selectReceipt, from: 0, metadata: true)
    }

    /// Stores a receipt a later row of the same id changed (zone and metadata).
    func update(_ n: Int, _ r: ManifestReceipt) throws {
        try updateReceipt.run {
            $0.text(r.zone)
            $0.bool(r.zoneExplicit)
            $0.blob(Self.encode(r.metadata))
            $0.int(n)
        }
    }

    func append(_ f: ManifestFile) throws {
        let n = fileCount
        let st = f.status
        try insertFile.run {
            $0.int(n)
            $0.int(f.line)
            for text in [f.given, f.folder, f.link, f.filename] { $0.text(text) }
            $0.int(f.receipt)
            $0.bytes(f.id)
            $0.int(f.size)
            $0.text(f.mediaType)
            $0.int(st.map { Int64($0.mode) })
            $0.int(st.map { Int64(bitPattern: $0.inode) })
            $0.int(st.map { Int64(bitPattern: $0.device) })
            $0.int(st?.mtimeNanoseconds)
            for flag in [f.known, f.cached, f.firstNew] { $0.bool(flag) }
        }
        try noteFile.run {
            $0.int(n)
            $0.int(f.receipt)
        }
        fileCount += 1
    }

    /// True the first time a content is named (by a row whose content the vault lacks).
    func firstSeen(_ id: Digest) throws -> Bool {
        try insertContent.run { $0.bytes(id) }
        return file.changes == 1
    }

    // MARK: Pass 2

    /// The next row in manifest order: the receipts without file first, then every row with one.
    func next() throws -> PlannedRow? {
        if finished { return nil }
        if reading == nil {
            try file.finishWriting()
            reading = (try file.prepare("""
                SELECT n, uuid, given, firstLine, zone, zoneExplicit, present, metadata FROM receipts
                WHERE firstFile IS NULL ORDER BY n
                """), false)
        }
        guard let (statement, files) = reading else { return nil }
        if try statement.step() {
            guard files else {
                return PlannedRow(file: nil, receipt: statement.int(0), planned: Self.receipt(statement, from: 1, metadata: true),
                                  first: true, last: true)
            }
            let s = statement
            let first = s.bool(17)
            let status = s.isNull(10) ? nil
                : FileStatus(size: s.int64(8), mode: mode_t(truncatingIfNeeded: s.int64(10)),
                             inode: UInt64(bitPattern: s.int64(11)), device: UInt64(bitPattern: s.int64(12)),
                             mtimeNanoseconds: s.int64(13))
            let folder = s.text(3, reusing: lastFolder) ?? ""
            lastFolder = folder
            let f = ManifestFile(line: s.int(1), given: s.text(2) ?? "", folder: folder, link: s.text(4),
                                 filename: s.text(5), receipt: s.int(6), id: s.blobID(7), size: s.int64(8),
                                 mediaType: s.text(9) ?? "", status: status, known: s.bool(14), cached: s.bool(15),
                                 firstNew: s.bool(16))
            return PlannedRow(file: f, receipt: f.receipt, planned: Self.receipt(s, from: 19, metadata: first),
                              first: first, last: s.bool(18))
        }
        guard !files else {
            // Stepped again, a finished statement would start over.
            reading = nil
            finished = true
            return nil
        }
        reading = (try file.prepare("""
            SELECT f.n, f.line, f.given, f.folder, f.link, f.filename, f.receipt, f.digest, f.size, f.mediaType, f.mode,
                   f.inode, f.device, f.mtime, f.known, f.cached, f.firstNew, r.firstFile = f.n, r.lastFile = f.n,
                   r.uuid, r.given, r.firstLine, r.zone, r.zoneExplicit, r.present,
                   CASE WHEN r.firstFile = f.n THEN r.metadata END
            FROM files f JOIN receipts r ON r.n = f.receipt ORDER BY f.n
            """), true)
        return try next()
    }

    // MARK: Receipts as rows

    private static func receipt(_ s: PlanStatement, from c: Int32, metadata: Bool) -> ManifestReceipt {
        ManifestReceipt(uuid: s.uuid(c), given: s.bool(c + 1), firstLine: s.int(c + 2), zone: s.text(c + 3) ?? "",
                        zoneExplicit: s.bool(c + 4), metadata: metadata ? decode(s.bytes(c + 6)) : ManifestMetadata(),
                        exists: s.bool(c + 5))
    }

    /// Per column: absent (0), or present (1) with its length in 7-bit groups, low first, the high bit
    /// saying more follow (one byte for values under 128), and its UTF-8 bytes.
    static func encode(_ metadata: ManifestMetadata) -> [UInt8] {
        var text: [UInt8] = []
        for column in ManifestMetadata.columns {
            guard let value = metadata.values[column] else {
                text.append(0)
                continue
            }
            text.append(1)
            var count = value.utf8.count
            while count >= 0x80 {
                text.append(UInt8(truncatingIfNeeded: count) | 0x80)
                count >>= 7
            }
            text.append(UInt8(count))
            text.append(contentsOf: value.utf8)
        }
        return text
    }

    /// `encode`'s inverse; bytes that end early leave the rest of the columns absent.
    static func decode(_ text: [UInt8]) -> ManifestMetadata {
        var metadata = ManifestMetadata()
        var at = 0
        for column in ManifestMetadata.columns {
            guard at < text.count else { break }
            let present = text[at] == 1
            at += 1
            guard present else { continue }
            var count = 0
            var shift = 0
            while at < text.count {
                let byte = text[at]
                at += 1
                count |= Int(byte & 0x7F) << shift
                shift += 7
                if byte < 0x80 { break }
            }
            guard at + count <= text.count else { break }
            metadata.values[column] = String(decoding: text[at..<at + count], as: UTF8.self)
            at += count
        }
        return metadata
    }
}
