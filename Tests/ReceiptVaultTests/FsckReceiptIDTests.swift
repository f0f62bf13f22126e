import BlobStore
import Foundation
import GRDB
import ReceiptCatalog
@testable import ReceiptVault
import TestSupport
import XCTest

/// fsck is a door where receipt ids come in from a catalog that may be damaged: a receipt row whose
/// id is no UUID (written by hand past the schema's check, as `sqlite3` could) is reported in one
/// line naming the row, quick or not, and the check goes on to the rest.
final class FsckReceiptIDTests: XCTestCase {
    func testAReceiptRowWhoseIDIsNoUUIDIsOneProblemNamingTheRow() async throws {
        let dir = TemporaryFolder()
        let (vault, report) = try Integrity.vault(in: dir, external: 2)
        let damaged = report.imported[0].id
        let row = try XCTUnwrap(try vault.catalog.read { db in try Catalog.receiptRow(db, id: damaged) })
        try vault.catalog.write { db in
            try db.execute(sql: "PRAGMA ignore_check_constraints = ON")
            try db.execute(sql: "UPDATE receipts SET id = 'not-a-receipt-id' WHERE rowNumber = ?", arguments: [row])
            try db.execute(sql: "PRAGMA ignore_check_constraints = OFF")
        }
        // Elsewhere the row is refused in one line that sends to fsck, not listed nor trapped on.
        XCTAssertThrowsError(try vault.list()) { error in
            XCTAssertEqual((error as? VaultError)?.kind, .unusableVault, "\(error)")
            XCTAssertEqual("\(error)", "the catalog holds a damaged row (could not decode ReceiptID from database value "
                + "\"not-a-receipt-id\"): run `receipt fsck` to find it")
        }
        let path = vault.path
        try vault.close()
        for quick in [true, false] {
            let found = try await Integrity.fsck(path, quick: quick)
            let line = "receipt row \(row) has the id 'not-a-receipt-id', which is no receipt id (a UUID)"
            XCTAssertEqual(found.problems.filter { $0.detail == line }.map(\.kind), [.catalog], "\(found.problems)")
            XCTAssertFalse(found.ok)
        }
    }
}
