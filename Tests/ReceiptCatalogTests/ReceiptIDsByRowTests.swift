import BlobStore
import Foundation
import GRDB
import GRDBSQLite
@testable import ReceiptCatalog
import TestSupport
import XCTest

/// `dups` names every grouped receipt of the vault by its row (195,000 of them at a million): asked in
/// one statement they could pass SQLite's limit of bound variables, and each row's object was held.
final class ReceiptIDsByRowTests: XCTestCase {
    func testMoreRowsThanSQLiteBindsInOneStatementAreNamedAndFiltered() throws {
        let folder = TemporaryFolder("receipt-ids-by-row")
        let catalog = try Catalog.create(at: folder.file(Catalog.fileName), settings: VaultSettings(vaultID: "test"))
        defer { try? catalog.close() }
        let ids = (0..<1_200).map { _ in ReceiptID(UUID()) }
        try catalog.write { db in
            for (n, id) in ids.enumerated() {
                // The first 700 made before the import this test pretends began at 1,000.
                try db.execute(sql: "INSERT INTO receipts (id, zone, createdAt, modifiedAt) VALUES (?, 'personal', ?, ?)",
                               arguments: [id, n < 700 ? 500 : 1_000 + n, 1_000 + n])
            }
        }
        try catalog.read { db in
            // This connection binds at most 999 variables in a statement (SQLite's own default before 3.32).
            sqlite3_limit(db.sqliteConnection, SQLITE_LIMIT_VARIABLE_NUMBER, 999)
            let rows = try Int64.fetchAll(db, sql: "SELECT rowNumber FROM receipts ORDER BY rowNumber")
            XCTAssertEqual(rows.count, 1_200)
            let named = try Catalog.receiptIDs(db, rows: rows)
            XCTAssertEqual(rows.map { named[$0] }, ids)
            XCTAssertEqual(try Catalog.receipts(db, among: ids, createdSince: 1_000), Set(ids[700...]))
        }
    }
}
