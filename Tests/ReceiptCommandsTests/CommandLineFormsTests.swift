import Foundation
import TestSupport
import XCTest

/// The command line as docs/CLI.md writes it: `--total -5`, `edit --clear`, `--version`, a claim
/// package's index.csv that sums to its total, and `remote set` taking the token from stdin or the
/// environment instead of the command line.
final class CommandLineFormsTests: CLITestCase {
    func show(_ id: String) throws -> [String: Any] {
        try XCTUnwrap(try json("show", id) as? [String: Any])
    }

    func testANegativeTotalFollowsItsOptionAsASeparateArgument() throws {
        let id = try importFile("refund.txt", Array("refund".utf8), "--total", "-5", "--currency", "EUR")
        XCTAssertEqual(try show(id)["total"] as? String, "-5")
        let r = try receipt("edit", id, "--total", "-7.50")
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(try show(id)["total"] as? String, "-7.50")
        XCTAssertEqual(try receipt("edit", id, "--total=-2").status, 0)
        XCTAssertEqual(try show(id)["total"] as? String, "-2")
    }

    func testClearEmptiesEveryFieldItNames() throws {
        let id = try importFile("a.txt", Array("a".utf8), "--merchant", "Acme", "--date", "2025-03-04", "--total", "12.34",
                                "--currency", "USD", "--category", "home", "--note", "n", "--tag", "x", "--tag", "y")
        XCTAssertEqual(try receipt("edit", id, "--status", "reimbursed", "--claim", "HSA-1", "--reimbursed-on", "2025-04-02").status, 0)
        let r = try receipt("edit", id, "--clear", "merchant,date,total", "--clear", "currency,category,note,tags,claim,reimbursedOn")
        XCTAssertEqual(r.status, 0, r.stderr)
        let cleared = try show(id)
        for field in ["merchant", "date", "total", "currency", "category", "note", "claim", "reimbursedOn"] {
            XCTAssertTrue(cleared[field] is NSNull, "\(field): \(cleared[field] ?? "absent")")
        }
        XCTAssertEqual(cleared["tags"] as? [String], [])
        XCTAssertEqual(cleared["status"] as? String, "reimbursed", "a field not named is kept")

        try assertRefused(["edit", id, "--clear", "merchant,price"], mentioning: "invalid --clear field 'price'")
        try assertRefused(["edit", id, "--clear", "total", "--total", "3"], mentioning: "--clear total and a new total")
    }

    func testVersionPrintsTheVersionAndTheCommit() throws {
        let text = try ReceiptBinary.run(["--version"])
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertNotNil(text.stdout.range(of: #"^receipt [0-9]+\.[0-9]+\.[0-9]+ \([^)\n]+\)\n$"#, options: .regularExpression),
                        text.stdout)
        let json = try ReceiptBinary.run(["--version", "--json"])
        XCTAssertEqual(json.status, 0, json.stderr)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: json.stdoutData) as? [String: String])
        XCTAssertEqual(Set(object.keys), ["version", "commit"])
        XCTAssertTrue(text.stdout.contains("\(object["version"]!) (\(object["commit"]!))"))
    }

    func testAClaimIndexCountsEachReceiptsTotalOnce() throws {
        let two = try importFile("p1.pdf", Array("%PDF-1.4 one".utf8), "--date", "2025-01-02", "--total", "10.10", "--currency", "EUR",
                                 "--no-index")
        let page = try folder.write("in/p2.pdf", Array("%PDF-1.4 two".utf8))
        XCTAssertEqual(try receipt("attach", two, page).status, 0)
        try importFile("q.pdf", Array("%PDF-1.4 three".utf8), "--date", "2025-01-03", "--total", "-0.10", "--currency", "EUR", "--no-index")
        let dest = folder.file("claim")
        XCTAssertEqual(try receipt("export", dest, "--for", "claim").status, 0)
        let rows = try String(contentsOfFile: dest + "/index.csv", encoding: .utf8).components(separatedBy: "\r\n")
            .filter { !$0.isEmpty }.dropFirst().map { $0.components(separatedBy: ",") }
        XCTAssertEqual(rows.map { $0[3] }, ["10.10", "", "'-0.10"], "the total on the receipt's first file only")
        let summary = try String(contentsOfFile: dest + "/summary.txt", encoding: .utf8)
        XCTAssertTrue(summary.contains("EUR 10.00  (2 receipts)"), summary)
    }

    func testRemoteSetTakesTheTokenFromStdinOrTheEnvironment() throws {
        let token = String(repeating: "ab", count: 32)
        let tokenFile = vault + "/remote.token"
        let piped = try ReceiptBinary.run(["-c", "printf '%s\\n' \(token) | \"$0\" --vault \"$1\" remote set http://127.0.0.1:9 --account alice --token-stdin",
                                           ReceiptBinary.path, vault], executable: "/bin/sh")
        XCTAssertEqual(piped.status, 0, piped.stderr)
        XCTAssertEqual(try String(contentsOfFile: tokenFile, encoding: .utf8), token + "\n")

        let other = String(repeating: "cd", count: 32)
        let fromEnvironment = try receipt("remote", "set", "http://127.0.0.1:9", "--account", "bob", environment: ["RECEIPT_TOKEN": other])
        XCTAssertEqual(fromEnvironment.status, 0, fromEnvironment.stderr)
        XCTAssertEqual(try String(contentsOfFile: tokenFile, encoding: .utf8), other + "\n")

        try assertRefused(["remote", "set", "http://127.0.0.1:9", "--account", "carol", "--token-stdin"],
                          mentioning: "no token on standard input")
    }
}
