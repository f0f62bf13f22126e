import BlobStore
import Foundation
import GRDB
@testable import ReceiptCatalog
@testable import ReceiptText
@testable import ReceiptVault
import TestSupport
import XCTest

/// Catalog v15 (`SignatureHalves`): the text signatures of a catalog as version 14 wrote them (128
/// minima of 32 bits, 64-bit band keys in `textBands` with an index by receipt) are converted when it
/// is first opened, in one transaction and from the stored minima alone, into 16-bit halves whose
/// bands are indexed slices of the signature; `dups` then finds the pairs version 14 found.
final class SignatureHalvesMigrationTests: XCTestCase {
    var folder: TemporaryFolder!

    override func setUp() { folder = TemporaryFolder("receipt-signature-halves") }
    override func tearDown() { folder = nil }

    /// Plain-text receipts of six shops, 40 words each; shops 0–2 were scanned twice and shop 3 three
    /// times, each re-scan reading three words differently; and two texts without a word.
    static func texts() -> [(name: String, text: String)] {
        let vocabulary = ("apples bananas pears kale spinach carrots potatoes onions garlic bread butter milk cheese yoghurt eggs "
            + "coffee tea sugar flour rice pasta beans lentils salt pepper soap shampoo towels candles matches batteries tape "
            + "glue nails paint brushes gloves twine seeds soil pots lamp").split(separator: " ").map(String.init)
        var out: [(String, String)] = []
        for shop in 0..<6 {
            var state = UInt64(shop + 1) &* 0x9E37_79B9_7F4A_7C15
            let words = (0..<40).map { _ -> String in
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return vocabulary[Int(state >> 33) % vocabulary.count]
            }
            out.append(("shop\(shop).txt", "SHOP \(["ALPHA", "BETA", "GAMMA", "DELTA", "EPSILON", "ZETA"][shop])\n" + words.joined(separator: " ")))
            for scan in 0..<(shop < 3 ? 1 : shop == 3 ? 2 : 0) {
                var misread = words
                for position in [5, 17, 29] { misread[position + scan] = "m1sread\(position + scan)" }
                out.append(("shop\(shop)-rescan\(scan).txt", "SHOP \(["ALPHA", "BETA", "GAMMA", "DELTA"][shop])\n" + misread.joined(separator: " ")))
            }
        }
        return out + [("blank-a.txt", "--- *** ---\n"), ("blank-b.txt", "--- *** ---\n=== ===\n")]
    }

    /// A vault of `texts()` read and signed by this version, whose signatures are then written back as
    /// version 14 wrote them (`signatures` fills the v10 tables); returns the receipts' ids in order.
    func versionFourteenVault(_ path: String, signatures: (Database) throws -> Void) throws -> [ReceiptID] {
        let vault = try Vault.create(at: path, inlineThreshold: 4096).vault
        let paths = try Self.texts().map { try folder.write("in/" + $0.name, $0.text) }
        let ids = try vault.importFiles(paths).imported.map(\.id)
        _ = try vault.indexText(tools: try ExtractorTools.locate(searchPath: "/usr/bin:/bin"))
        _ = try vault.duplicateGroups()
        try vault.close()
        let queue = try DatabaseQueue(path: FileSystem.join(path, Catalog.fileName))
        try queue.write { db in
            try db.execute(sql: "DROP VIEW textBands; DROP TABLE textSignatures")
            try db.execute(sql: Catalog.wholeSignaturesSQL)
            try signatures(db)
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = ?", arguments: [SignatureHalves.identifier])
        }
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA user_version = \(Schema.version - 1)") }
        try queue.close()
        return ids
    }

    /// What version 14 stored for each receipt with text: the whole minima and their band keys.
    static func wholeSignatures(_ db: Database) throws {
        for row in try Int64.fetchAll(db, sql: "SELECT rowNumber FROM receipts ORDER BY rowNumber") {
            let text = try Catalog.texts(db, ofRow: row, extractor: TextExtractor.version).map(\.text).joined(separator: "\n")
            let minima = TextSignature.wholeMinima(text) ?? []
            let bytes = minima.flatMap { m in (0..<4).map { UInt8(truncatingIfNeeded: m >> (8 * UInt32($0))) } }
            try db.execute(sql: "INSERT INTO textSignatures(receiptRow, extractor, minhash) VALUES (?, ?, ?)",
                           arguments: [row, TextExtractor.version, Data(bytes)])
            for key in Set(bandKeysOfVersion14(minima)) {
                try db.execute(sql: "INSERT INTO textBands(bandKey, receiptRow) VALUES (?, ?)", arguments: [key, row])
            }
        }
    }

    /// Version 14's band keys: 32 bands of two whole minima, mixed with the band's number.
    static func bandKeysOfVersion14(_ minima: [UInt32]) -> [Int64] {
        minima.isEmpty ? [] : (0..<32).map { band in
            var h = TextSignature.mix(UInt64(band) &+ 0x9E37_79B9)
            for row in 0..<2 { h = TextSignature.mix(h ^ UInt64(minima[band * 2 + row])) }
            return Int64(bitPattern: h)
        }
    }

    /// The groups version 14's `dups` gave: receipts sharing one of its band keys whose whole minima
    /// agree in at least `TextSignature.sameText` of 128 (these texts hold no date or total).
    static func groupsOfVersion14(_ db: Database) throws -> Set<Set<Int64>> {
        var minima: [Int64: [UInt32]] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT receiptRow, minhash FROM textSignatures") {
            let bytes = [UInt8](row[1] as Data)
            minima[row[0]] = stride(from: 0, to: bytes.count, by: 4).map { (i: Int) -> UInt32 in
                let b = bytes[i..<i + 4].map(UInt32.init)
                return b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24
            }
        }
        var groups: [Set<Int64>] = []
        for rows in try String.fetchAll(db, sql: "SELECT group_concat(receiptRow) FROM textBands GROUP BY bandKey HAVING count(*) > 1") {
            let rows = rows.split(separator: ",").compactMap { Int64($0) }
            for (i, a) in rows.enumerated() {
                for b in rows[(i + 1)...] {
                    let same = zip(minima[a]!, minima[b]!).filter { $0 == $1 }.count
                    guard Double(same) / 128 >= TextSignature.sameText else { continue }
                    let joined = groups.filter { !$0.isDisjoint(with: [a, b]) }
                    groups.removeAll { !$0.isDisjoint(with: [a, b]) }
                    groups.append(joined.reduce(Set([a, b])) { $0.union($1) })
                }
            }
        }
        return Set(groups)
    }

    func testAVersionFourteenCatalogsSignaturesBecomeHalvesAndDupsFindsWhatItFound() async throws {
        let path = folder.file("vault")
        let ids = try versionFourteenVault(path, signatures: Self.wholeSignatures)
        let raw = try DatabaseQueue(path: FileSystem.join(path, Catalog.fileName))
        let before = try await raw.read { db in try Self.groupsOfVersion14(db) }
        try raw.close()
        // Rows 1-2, 3-4, 5-6 and 7-9: each shop with its re-scans; the other shops and the blank texts alone.
        XCTAssertEqual(before, [[1, 2], [3, 4], [5, 6], [7, 8, 9]])

        let vault = try Vault.open(at: path)
        let texts = Self.texts()
        try vault.catalog.read { db in
            XCTAssertEqual(try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations").last, SignatureHalves.identifier)
            XCTAssertEqual(try String.fetchOne(db, sql: "SELECT type FROM sqlite_master WHERE name = 'textBands'"), "view")
            // Each converted signature is the one this version makes from the text, without reading it.
            let stored = try Row.fetchAll(db, sql: "SELECT receiptRow, minhash FROM textSignatures ORDER BY receiptRow")
            XCTAssertEqual(stored.map { [UInt8]($0[1] as Data) }, texts.map { TextSignature(text: $0.text)?.bytes ?? [] })
        }
        let groups = try vault.duplicateGroups()
        XCTAssertEqual(groups.map(\.reason), Array(repeating: "same-text", count: 4))
        XCTAssertEqual(Set(groups.map { Set($0.receipts) }), Set(before.map { Set($0.map { ids[Int($0) - 1] }) }))
        // A re-scan imported after the migration meets its shop through the new band indexes.
        let again = try vault.importFiles([try folder.write("in/again.txt", texts[0].text.replacingOccurrences(of: "SHOP", with: "SH0P"))])
        _ = try vault.indexText(tools: try ExtractorTools.locate(searchPath: "/usr/bin:/bin"))
        let added = again.imported[0].id
        XCTAssertEqual(Set(try vault.possibleDuplicates(of: [added])[added] ?? []), [ids[0], ids[1]])
        try vault.close()
        let check = try await Vault.fsck(at: path)
        XCTAssertTrue(check.ok, "\(check.problems)")
    }

    /// A stored signature that is not 128 minima of 4 bytes cannot be converted: refused in one line
    /// naming the receipt row and the length; the file is byte for byte what it was, and stays so.
    func testASignatureThatIsNoWholeMinimaIsRefusedAndTheFileLeftAsItWas() async throws {
        let path = folder.file("vault")
        _ = try versionFourteenVault(path) { db in
            try Self.wholeSignatures(db)
            try db.execute(sql: "UPDATE textSignatures SET minhash = zeroblob(100) WHERE receiptRow = 3")
        }
        let catalogPath = FileSystem.join(path, Catalog.fileName)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: catalogPath))
        for _ in 0..<2 {
            XCTAssertThrowsError(try Vault.open(at: path)) { error in
                XCTAssertTrue("\(error)".contains("table textSignatures holds for receipt row 3 a blob of length 100, which is no signature"
                    + " of 128 four-byte minima (migration v15-signature-halves)"), "\(error)")
                XCTAssertFalse("\(error)".contains("\n"), "\(error)")
            }
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: catalogPath)), bytes)
        }
    }
}
