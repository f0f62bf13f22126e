import Foundation
import GRDB

/// Catalog v15: a text signature keeps the low 16 bits of each of its 128 minima (256 bytes, was
/// 512) and its 32 band keys are slices of those bytes, indexed on the signature row itself
/// (`Catalog.signatureBands`), instead of 64-bit keys in a table of their own with an index by
/// receipt: at 100,000 small text receipts those were 172 MB, 27 % of the catalog. See "Re-scans"
/// in docs/DESIGN.md; why the halves find every pair the whole minima found: `TextSignature`.
///
/// Converted in place from the stored minima, no text read again (a half is the low half of the
/// stored value, as a new signature takes it), in the migrator's one transaction: the signatures
/// are copied into a new table, the band table dropped, the indexes made. A signature that is
/// neither empty (a text without words) nor 128 minima of 4 bytes cannot be converted: refused
/// before the first change, naming the receipt row and the length.
enum SignatureHalves {
    static let identifier = "v15-signature-halves"

    static func migrate(_ db: Database) throws {
        try refuseWhatIsNoSignature(db)
        db.add(function: halves)
        defer { db.remove(function: halves) }
        try db.execute(sql: """
            CREATE TABLE textSignaturesV15 (
                receiptRow INTEGER PRIMARY KEY REFERENCES receipts(rowNumber) ON DELETE CASCADE,
                extractor TEXT NOT NULL,
                minhash BLOB NOT NULL CHECK (typeof(minhash) = 'blob' AND length(minhash) IN (0, 256))
            );
            INSERT INTO textSignaturesV15(receiptRow, extractor, minhash)
                SELECT receiptRow, extractor, receipt_signature_halves(minhash) FROM textSignatures ORDER BY receiptRow;
            DROP TABLE textBands;
            DROP TABLE textSignatures;
            ALTER TABLE textSignaturesV15 RENAME TO textSignatures;
            \(Catalog.signatureBandsSQL)
            """)
    }

    /// 512 bytes of little-endian 32-bit minima → 256 bytes of their low halves; empty stays empty.
    static let halves = DatabaseFunction("receipt_signature_halves", argumentCount: 1, pure: true) { values in
        let whole = [UInt8](Data.fromDatabaseValue(values[0]) ?? Data())
        return Data(stride(from: 0, to: whole.count, by: 4).flatMap { whole[$0..<$0 + 2] })
    }

    /// Refuses, through a read-only connection, a catalog not yet converted that holds a signature
    /// that cannot be converted: the file is left byte for byte as it was.
    static func refuseUnconvertible(at path: String) throws {
        try Schema.refuseReadOnly(at: path, before: identifier, refuseWhatIsNoSignature)
    }

    static func refuseWhatIsNoSignature(_ db: Database) throws {
        guard try db.tableExists("textSignatures"), let bad = try Row.fetchOne(db, sql: """
                  SELECT receiptRow, typeof(minhash), length(minhash) FROM textSignatures
                  WHERE typeof(minhash) <> 'blob' OR length(minhash) NOT IN (0, 512) LIMIT 1
                  """) else { return }
        throw DatabaseError(resultCode: .SQLITE_CONSTRAINT_CHECK, message:
            "table textSignatures holds for receipt row \(bad[0] as Int64) a \(bad[1] as String) of length \(bad[2] as Int64? ?? 0), which is no signature of 128 four-byte minima (migration \(identifier))")
    }
}
