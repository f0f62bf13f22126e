import BlobStore
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

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

    /// The plan files in the vault's `interim/` folder.
    func planFiles() -> [String] {
        ((try? FileSystem.contents(of: vault + "/interim")) ?? []).filter { $0.hasSuffix(".plan.interim") }
    }

    func testThePlanFileIsRemovedAfterASuccessAndAfterAFailedCheck() throws {
        try folder.write("m/a.txt", Array("one\n".utf8))
        let good = try folder.write("m/good.csv", "path,merchant\na.txt,Shop\n")
        XCTAssertEqual(try receipt("import", "--manifest", good, "--no-index").status, 0)
        XCTAssertEqual(planFiles(), [])
        let bad = try folder.write("m/bad.csv", "path,date\na.txt,2025-01-01\nmissing.txt,2025-01-02\n")
        let r = try receipt("import", "--manifest", bad, "--no-index")
        XCTAssertNotEqual(r.status, 0)
        XCTAssertTrue(r.stderr.contains("bad.csv:3: no such file: missing.txt"), r.stderr)
        XCTAssertEqual(try list().count, 1, "nothing of the bad manifest is written")
        XCTAssertEqual(planFiles(), [])
    }

    func testAPlanFileLeftByASIGKILLedImportIsRemovedByTheNextImport() throws {
        var text = "path,id,merchant\n"
        for i in 0..<4000 {
            try folder.write("m/f\(i).txt", Array("receipt \(i)\n".utf8))
            text += "f\(i).txt,\(ReceiptTestIDs.id(i)),Shop \(i)\n"
        }
        let manifest = try folder.write("m/manifest.csv", text)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ReceiptBinary.path)
        process.arguments = ["--vault", vault, "import", "--manifest", manifest, "--no-index"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        var killed = false
        while process.isRunning {
            if !planFiles().isEmpty {
                kill(process.processIdentifier, SIGKILL)
                killed = true
                break
            }
            usleep(100)  // polling a condition: the kill waits for the plan file
        }
        process.waitUntilExit()
        guard killed, process.terminationReason == .uncaughtSignal else {
            return XCTFail("the import ended before its plan file was seen (make the manifest longer)")
        }
        XCTAssertEqual(planFiles().count, 1, "a SIGKILL leaves the plan file behind")
        try folder.write("m/one.csv", "path,merchant\nf0.txt,Shop\n")
        let next = try receipt("import", "--manifest", folder.file("m/one.csv"), "--no-index")
        XCTAssertEqual(next.status, 0, next.stderr)
        XCTAssertEqual(planFiles(), [], "the next import removed the killed one's plan")
        // The whole manifest imports after it, and re-importing it changes nothing.
        XCTAssertEqual(try receipt("import", "--manifest", manifest, "--no-index").status, 0)
        XCTAssertEqual(try list().count, 4000 + 1)
        let fsck = try XCTUnwrap(try json("fsck", "--quick") as? [String: Any])
        XCTAssertEqual(fsck["ok"] as? Bool, true, "\(fsck)")
    }
}

/// Ids of test receipts, one per number.
enum ReceiptTestIDs {
    static func id(_ i: Int) -> String {
        let hex = String(i, radix: 16)
        return "00000000-0000-4000-8000-" + String(repeating: "0", count: 12 - hex.count) + hex
    }
}
