import Foundation
import XCTest

/// Every input a fuzz target in Fuzz/ ever crashed on is kept in Fuzz/regressions/TARGET/ and replayed
/// here through the same check the fuzzer runs (Checks/), so `tools/test` catches a regression without
/// the fuzzer. The seed corpora (Fuzz/corpus/) are replayed too: they cover each parser's good paths.
final class FuzzRegressionTests: XCTestCase {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    func replay(_ target: String, _ check: ([UInt8]) -> Void) throws {
        var replayed = 0
        for kind in ["corpus", "regressions"] {
            let folder = Self.fuzzDirectory.appendingPathComponent(kind).appendingPathComponent(target)
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { continue }
            for name in names.sorted() where !name.hasPrefix(".") {
                check(Array(try Data(contentsOf: folder.appendingPathComponent(name))))
                replayed += 1
            }
        }
        // The seed corpus is committed: finding nothing means the path above is wrong, not that all is well.
        XCTAssertGreaterThan(replayed, 0, "no inputs for \(target) under \(Self.fuzzDirectory.path)")
    }

    func testManifest() throws { try replay("FuzzManifest", checkManifest) }
    func testBundle() throws { try replay("FuzzBundle", checkBundle) }
    func testWire() throws { try replay("FuzzWire", checkWire) }
    func testNames() throws { try replay("FuzzNames", checkNames) }
    func testXZ() throws { try replay("FuzzXZ", checkXZ) }
    func testWebForm() throws { try replay("FuzzWebForm", checkWebForm) }
}
