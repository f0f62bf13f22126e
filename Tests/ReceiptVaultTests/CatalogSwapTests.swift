import BlobStore
import Foundation
import ReceiptCatalog
import ReceiptVault
import TestSupport
import XCTest

/// A command that opened the vault before `fsck --repair` replaced its catalog must not write into
/// the catalog that was set aside: it refuses, and the new catalog is untouched.
final class CatalogSwapTests: XCTestCase {
    func testWritesRefuseWhenTheCatalogWasReplacedAfterOpening() throws {
        let folder = TemporaryFolder("receipt-swap")
        let path = folder.file("vault")
        let vault = try Vault.create(at: path).vault
        let input = try folder.write("scan.txt", "Pharmacy 23.40\n")
        let id = try XCTUnwrap(vault.importFiles([input]).imported.first?.id)

        // What a repair does: set the catalog aside, put a rebuilt one in its place.
        let catalog = FileSystem.join(path, Catalog.fileName)
        try FileSystem.makeDirectories(folder.file("aside"))
        for suffix in ["", "-wal", "-shm"] where FileSystem.exists(catalog + suffix) {
            try FileSystem.rename(catalog + suffix, folder.file("aside/catalog.sqlite" + suffix))
        }
        let rebuilt = try Vault.create(at: folder.file("other")).vault
        try rebuilt.close()
        try FileSystem.rename(folder.file("other/catalog.sqlite"), catalog)

        for attempt in [
            { _ = try vault.edit(id.text, ReceiptMetadata(total: "1.00")) },
            { _ = try vault.remove([id.text]) },
            { _ = try vault.importFiles([input]) },
        ] as [() throws -> Void] {
            XCTAssertThrowsError(try attempt()) { error in
                XCTAssertTrue("\(error)".contains("was replaced"), "\(error)")
            }
        }
        let fresh = try Vault.open(at: path)
        XCTAssertEqual(try fresh.list().count, 0, "nothing reached the new catalog")
        XCTAssertEqual(try vault.show(id.text).total, nil, "nothing reached the old one either")
    }
}
