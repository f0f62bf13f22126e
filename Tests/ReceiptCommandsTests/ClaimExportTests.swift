import Foundation
import TestSupport
import XCTest
import ZIPFoundation

/// `receipt export DEST --for claim`: numbered files, index.csv, summary.txt, SHA256SUMS that
/// coreutils' `sha256sum -c` accepts, and a manifest that re-imports.
final class ClaimExportTests: CLITestCase {
    func fill() throws -> [String] {
        var ids: [String] = []
        ids.append(try importFile("rx-march.pdf", Array("%PDF-1.4 march".utf8), "--merchant", "CVS Pharmacy", "--date", "2025-03-04",
                                  "--total", "0.10", "--currency", "USD", "--category", "health", "--no-index"))
        ids.append(try importFile("rx-jan.txt", Array("january".utf8), "--merchant", "Dr. Müller", "--date", "2025-01-20",
                                  "--total", "0.20", "--currency", "USD", "--category", "health", "--no-index"))
        ids.append(try importFile("changelog.pdf", Array("%PDF-1.4 undated".utf8), "--total", "7.5", "--currency", "EUR",
                                  "--category", "health", "--no-index"))
        ids.append(try importFile("groceries.txt", Array("food".utf8), "--merchant", "Market", "--date", "2025-02-01",
                                  "--total", "50", "--currency", "USD", "--category", "food", "--no-index"))
        XCTAssertEqual(try receipt("edit", ids[0], "--status", "submitted", "--claim", "HSA-17").status, 0)
        return ids
    }

    func testAClaimPackagePassesSha256sumAndReimports() throws {
        let ids = try fill()
        let dest = folder.file("claim")
        let out = try receipt("export", dest, "--for", "claim", "--category", "health")
        XCTAssertEqual(out.status, 0, out.stderr)
        let names = try FileManager.default.contentsOfDirectory(atPath: dest).sorted()
        XCTAssertEqual(names, ["001_2025-01-20_dr-muller.txt", "002_2025-03-04_cvs-pharmacy.pdf", "003_undated_changelog.pdf",
                               "SHA256SUMS", "index.csv", "manifest.csv", "receipts.json", "summary.txt"])
        let index = try String(contentsOfFile: dest + "/index.csv", encoding: .utf8)
        let rows = index.components(separatedBy: "\r\n")
        XCTAssertEqual(rows[0], "number,date,merchant,total,currency,category,status,claim,file,sha256")
        XCTAssertTrue(rows[2].hasPrefix("002,2025-03-04,CVS Pharmacy,0.10,USD,health,submitted,HSA-17,002_2025-03-04_cvs-pharmacy.pdf,"), rows[2])
        let summary = try String(contentsOfFile: dest + "/summary.txt", encoding: .utf8)
        XCTAssertTrue(summary.contains("USD 0.30  (2 receipts)"), summary)
        XCTAssertTrue(summary.contains("EUR 7.5  (1 receipt)"), summary)

        let check = Process()
        check.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        check.arguments = ["-c", "--strict", "SHA256SUMS"]
        check.currentDirectoryURL = URL(fileURLWithPath: dest)
        check.standardOutput = FileHandle.nullDevice
        try check.run()
        check.waitUntilExit()
        XCTAssertEqual(check.terminationStatus, 0, "sha256sum -c SHA256SUMS")
        let sums = try String(contentsOfFile: dest + "/SHA256SUMS", encoding: .utf8)
        XCTAssertEqual(sums.split(separator: "\n").count, 7, "every file but SHA256SUMS itself")

        // Re-import into an empty vault: the same receipts, ids and bytes.
        let other = folder.file("other")
        XCTAssertEqual(try ReceiptBinary.run(["--vault", other, "init"]).status, 0)
        let back = try ReceiptBinary.run(["--vault", other, "import", "--manifest", dest + "/manifest.csv", "--no-index"])
        XCTAssertEqual(back.status, 0, back.stderr)
        let listed = try ReceiptBinary.run(["--vault", other, "list", "--json"])
        let receipts = try XCTUnwrap(try JSONSerialization.jsonObject(with: listed.stdoutData) as? [[String: Any]])
        XCTAssertEqual(Set(receipts.compactMap { $0["id"] as? String }), Set([ids[0], ids[1], ids[2]]))
        let submitted = try XCTUnwrap(receipts.first { $0["id"] as? String == ids[0] })
        XCTAssertEqual(submitted["status"] as? String, "submitted", "the manifest carries the claim fields")
        XCTAssertEqual(submitted["claim"] as? String, "HSA-17")
    }

    func testAZippedClaimPackageHoldsTheSameFiles() throws {
        _ = try fill()
        let zip = folder.file("claim.zip")
        let out = try receipt("export", zip, "--zip", "--for", "claim", "--status", "submitted")
        XCTAssertEqual(out.status, 0, out.stderr)
        let archive = try Archive(url: URL(fileURLWithPath: zip), accessMode: .read)
        XCTAssertEqual(archive.map(\.path).sorted(), ["001_2025-03-04_cvs-pharmacy.pdf", "SHA256SUMS", "index.csv",
                                                      "manifest.csv", "receipts.json", "summary.txt"])
        XCTAssertEqual(try receipt("export", folder.file("x"), "--for", "taxes").status, 2)
    }
}
