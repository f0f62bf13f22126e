import Foundation
import TestSupport
import XCTest

/// `list` streams (a chunk of receipts at a time, in two index-ordered passes: dated, then undated):
/// across chunk boundaries the order, the filters, the attachments and the JSON document must be
/// exactly what one sorted query gave.
final class ListStreamTests: CLITestCase {
    /// 700 receipts (more than two chunks of 256): dates spread over three months in an order unlike
    /// the ids', every 7th undated, every 5th in zone `work`, every 3rd with a second attachment.
    func makeVault() throws -> [(id: String, date: String?, zone: String, files: Int)] {
        XCTAssertEqual(try receipt("zone", "create", "work").status, 0)
        var csv = "id,path,date,merchant,zone\n"
        var expected: [(id: String, date: String?, zone: String, files: Int)] = []
        for i in 0..<700 {
            let id = String(format: "%08x-0000-4000-8000-%012x", (i * 7919) % 700 + 1, i)
            let date: String? = i % 7 == 0 ? nil : String(format: "2025-%02d-%02d", 3 + i % 3, 1 + (i * 13) % 28)
            let zone = i % 5 == 0 ? "work" : "personal"
            try folder.write("in/r\(i).txt", "receipt \(i)")
            csv += "\(id),r\(i).txt,\(date ?? ""),Shop \(i),\(zone)\n"
            if i % 3 == 0 {
                try folder.write("in/extra\(i).txt", "extra \(i)")
                csv += "\(id),extra\(i).txt,\(date ?? ""),Shop \(i),\(zone)\n"
            }
            expected.append((id, date, zone, i % 3 == 0 ? 2 : 1))
        }
        let manifest = try folder.write("in/manifest.csv", csv)
        let r = try receipt("import", "--manifest", manifest, "--no-index")
        XCTAssertEqual(r.status, 0, r.stderr)
        return expected
    }

    func testListStreamsInOrderWithEveryFilterAndAttachmentAcrossChunks() throws {
        let all = try makeVault()
        func order(_ rows: [(id: String, date: String?, zone: String, files: Int)]) -> [String] {
            let dated = rows.filter { $0.date != nil }.sorted { ($0.date ?? "", $0.id) < ($1.date ?? "", $1.id) }
            let undated = rows.filter { $0.date == nil }.sorted { $0.id < $1.id }
            return (dated + undated).map(\.id)
        }
        func listed(_ args: String...) throws -> [[String: Any]] {
            try XCTUnwrap(try json(["list"] + args) as? [[String: Any]])
        }
        let everything = try listed()
        XCTAssertEqual(everything.map { $0["id"] as? String }, order(all))
        let files = Dictionary(uniqueKeysWithValues: all.map { ($0.id, $0.files) })
        for r in everything {
            let id = try XCTUnwrap(r["id"] as? String)
            XCTAssertEqual((r["attachments"] as? [[String: Any]])?.count, files[id], id)
        }
        let april = try listed("--from", "2025-04-01", "--to", "2025-04-30")
        XCTAssertEqual(april.map { $0["id"] as? String },
                       order(all.filter { ($0.date ?? "").hasPrefix("2025-04") }))
        XCTAssertEqual(try listed("--zone", "work").map { $0["id"] as? String }, order(all.filter { $0.zone == "work" }))
        XCTAssertEqual(try listed("--zone", "work", "--from", "2025-05-01").map { $0["id"] as? String },
                       order(all.filter { $0.zone == "work" && ($0.date ?? "") >= "2025-05-01" }))
        XCTAssertEqual(try listed("--merchant", "shop 14").map { $0["id"] as? String }, [all[14].id])
        XCTAssertEqual(try listed("--from", "2026-01-01").count, 0)
        let none = try receipt("list", "--from", "2026-01-01", "--json")
        XCTAssertEqual(none.stdout, "[]\n")
        let text = try receipt("list", "--zone", "work")
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertEqual(text.stdout.split(separator: "\n").map { String($0.prefix(8)) },
                       order(all.filter { $0.zone == "work" }).map { String($0.prefix(8)) })
        try assertRefused(["list", "--to", "2025-13-01"], mentioning: "invalid date '2025-13-01'")
    }
}
