import BlobStore
import Foundation
import TestSupport
import XCTest

/// A manifest import's search index (each receipt indexed once, at the end of its batch's
/// transaction) and its plan file (the checked rows between the passes, in `interim/`).
final class ManifestPlanTests: CLITestCase {
    let idA = "1f2e3d4c-5b6a-4789-9abc-def012345678"

    func found(_ words: String...) throws -> [String] {
        let hits = try XCTUnwrap(try json(["search"] + words) as? [[String: Any]])
        return hits.compactMap { $0["id"] as? String }
    }

    func testAManifestImportedReceiptIsFoundByMerchantFileNameAndTextRightAfterTheImport() throws {
        try folder.write("m/zebra-invoice.txt", Array("kumquat marmalade 2 jars\n".utf8))
        try folder.write("m/second.txt", Array("second page\n".utf8))
        try folder.write("m/other.txt", Array("nothing to see\n".utf8))
        let manifest = try folder.write("m/manifest.csv", """
            path,id,merchant,category
            zebra-invoice.txt,\(idA),Quixotic Grocer,food
            second.txt,\(idA),,
            other.txt,,Plain Shop,

            """)
        let r = try receipt("import", "--manifest", manifest)
        XCTAssertEqual(r.status, 0, r.stderr)
        // Merchant, category, a file name of either attachment, and the text read of the files.
        for words in [["quixotic"], ["grocer", "food"], ["zebra"], ["second"], ["kumquat", "marmalade"]] {
            XCTAssertEqual(try found(words.joined(separator: " ")), [idA], "\(words)")
        }
        XCTAssertEqual(try found("plain").count, 1)
        // An update through the manifest replaces the receipt's row; a deletion takes it at once.
        try folder.write("m/manifest.csv", "path,id,merchant\nzebra-invoice.txt,\(idA),Zealous Deli\n")
        XCTAssertEqual(try receipt("import", "--manifest", manifest, "--no-index").status, 0)
        XCTAssertEqual(try found("quixotic"), [])
        XCTAssertEqual(try found("zealous"), [idA])
        XCTAssertEqual(try found("kumquat"), [idA])
        let fsck = try XCTUnwrap(try json("fsck") as? [String: Any])
        XCTAssertEqual(fsck["ok"] as? Bool, true, "\(fsck)")
        XCTAssertEqual(try receipt("rm", idA).status, 0)
        XCTAssertEqual(try found("zealous"), [])
        XCTAssertEqual(try found("zebra"), [])
    }
}
