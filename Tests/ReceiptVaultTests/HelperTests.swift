import Foundation
import XCTest
import BlobStore
import ReceiptCatalog
@testable import MediaTypes
@testable import ReceiptVault

/// The small pieces the import and export paths are built from, on their edges.
final class HelperTests: XCTestCase {
    /// Every value is made once and reaches the one taker of its index, with at most `limit` made and
    /// not yet taken, whichever threads take them (claiming indexes in rising order, as
    /// `Parallel.map`'s workers do).
    func testAheadHandsEachValueToItsTakerOnceAndStaysWithinItsLimit() throws {
        for (count, limit, takers) in [(500, 8, 4), (300, 5, 1), (40, 1, 3), (0, 4, 2), (1, 64, 4)] {
            let counter = Counter()
            let ahead = Parallel.Ahead(count: count, limit: limit) { index -> Int in
                counter.made(index)
                return index * 3
            }
            let values = try finished(within: 30) {
                Parallel.map(Array(0..<count), workers: takers) { index -> Int in
                    let value = ahead.take(index)
                    counter.taken()
                    return value
                }.compactMap { try? $0.get() }
            }
            XCTAssertEqual(values, (0..<count).map { $0 * 3 }, "\(count) values, limit \(limit)")
            XCTAssertEqual(counter.order, Array(0..<count), "made one at a time, in index order")
            // Counted here a little late: a taker counts after `take` returned, the maker before it
            // stores the value; so one more than the limit per taker can show, at most.
            XCTAssertLessThanOrEqual(counter.mostAhead, limit + takers, "limit \(limit), \(takers) takers")
            if takers == 1 { XCTAssertLessThanOrEqual(counter.mostAhead, limit + 1) }
        }
    }

    /// `body`'s result, failing the test (instead of hanging the run) when it has not returned in time.
    private func finished<T: Sendable>(within seconds: Double, _ body: @escaping @Sendable () -> T) throws -> T {
        let result = Parallel.Future(body)
        let done = DispatchSemaphore(value: 0)
        Thread { _ = result.wait(); done.signal() }.start()
        guard done.wait(timeout: .now() + seconds) == .success else {
            XCTFail("not finished after \(seconds) s: the takers or the maker are stuck")
            throw Stuck()
        }
        return result.wait()
    }

    private struct Stuck: Error {}

    /// UTF-8 text, allowing a sequence cut by the sample's end (the last three bytes), as before the
    /// check read the bytes in place.
    func testIsTextAcceptsUTF8AndASequenceCutAtTheEndOnly() {
        func isText(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { MediaType.isText($0) } }
        XCTAssertTrue(isText(Array("plain text, café ✓\n".utf8)))
        XCTAssertTrue(isText(Array("cut at the end: ".utf8) + [0xE2, 0x9C]))  // first two bytes of ✓
        XCTAssertTrue(isText(Array("x".utf8) + [0xFF]))  // a bad last byte: within the last three
        XCTAssertFalse(isText(Array("a bad byte ".utf8) + [0xFF] + Array(" in the middle".utf8)))
        XCTAssertFalse(isText(Array("a NUL".utf8) + [0] + Array("inside".utf8)))
        XCTAssertTrue(isText([]))
        // The 8-bytes-at-a-time ASCII check, against the plain rule, with one odd byte at every place
        // of every length up to three words and a tail.
        for count in 0...27 {
            for place in 0..<max(count, 1) {
                for odd: UInt8 in [0, 1, 0x7F, 0x80, 0xC3, 0xFF] {
                    var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: count)
                    if count > 0 { bytes[place] = odd }
                    let expected = bytes.allSatisfy { $0 != 0 && $0 < 0x80 }
                    XCTAssertEqual(bytes.withUnsafeBytes { MediaType.isASCIIWithoutNUL($0) }, expected, "\(bytes)")
                }
            }
        }
    }

    /// A manifest's receipt id is a UUID in its canonical form, either case, written back in lower case;
    /// anything else is refused (Foundation's `sscanf`-based reader let a short last group through).
    /// The vault and the server accept the same names: one the vault took but the server refused
    /// would sit in the outbox forever.
    /// A date is YYYY-MM-DD in ASCII digits and names a day of the proleptic Gregorian calendar;
    /// blanks around it are dropped, as every door drops them around a total (FieldRulesAgreementTests).
    func testDatesAreTenASCIICharactersNamingADayThatExists() {
        for good in ["2024-02-29", "2000-02-29", "2025-12-31", "0001-01-01", "2025-04-30"] {
            XCTAssertEqual(try Validate.date(good), good)
        }
        for padded in ["2025-01-01 ", " 2025-01-01", "\t2025-01-01"] {
            XCTAssertEqual(try Validate.date(padded), "2025-01-01")
        }
        let shape = ["2025-2-3", "2025-02-3x", "２０２５-01-01", "2025 -01-01", "2025/01/01", "20250101",
                     "2025-01-011", "-2025-01-1", "", "2025-0١-01", "2025-01-0\u{301}"]
        for bad in shape {
            XCTAssertThrowsError(try Validate.date(bad), bad) {
                XCTAssertEqual("\($0)", "invalid date '\(bad)': expected YYYY-MM-DD")
            }
        }
        for bad in ["2025-02-30", "2023-02-29", "1900-02-29", "0000-01-01", "2025-00-10", "2025-13-01", "2025-01-00",
                    "2025-04-31"] {
            XCTAssertThrowsError(try Validate.date(bad), bad) { XCTAssertEqual("\($0)", "invalid date '\(bad)': no such day") }
        }
    }

    func testZoneNamesFollowTheServersRule() throws {
        for good in ["household", "a", "alice/2025.tax", "x-y_z", String(repeating: "n", count: 64)] {
            XCTAssertEqual(try Validate.zoneName(good), good)
        }
        for bad in ["-x", ".x", "alice/-x", "-alice/x", "", "a//b", "a/b/c", "a b", "café", String(repeating: "n", count: 65)] {
            XCTAssertThrowsError(try Validate.zoneName(bad), bad)
        }
    }

    func testReceiptIdsAreCanonicalUUIDsAndPrintInLowerCase() {
        for text in ["1F2E3D4C-5B6A-4789-9ABC-DEF012345678", "1f2e3d4c-5b6a-4789-9abc-def012345678"] {
            XCTAssertEqual(ReceiptID(text)?.uuid, UUID(uuidString: text), text)
            XCTAssertEqual(ReceiptID(text)?.text, "1f2e3d4c-5b6a-4789-9abc-def012345678", text)
        }
        XCTAssertEqual(ReceiptID("1F2E3D4C-5B6A-4789-9ABC-DEF012345678"), ReceiptID("1f2e3d4c-5b6a-4789-9abc-def012345678"))
        for text in ["1f2e3d4c5b6a47899abcdef012345678", "1f2e3d4c-5b6a-4789-9abc-def01234567",
                     "1f2e3d4c-5b6a-4789-9abc-def0123456789", "1f2e3d4c-5b6a-4789-9abc_def012345678",
                     "1g2e3d4c-5b6a-4789-9abc-def012345678", " 1f2e3d4c-5b6a-4789-9abc-def01234567",
                     "1f2e3d4c-5b6a-4789-9abc-def01234567é", "1f2e3d4c-5b6a-4789-9abc- ef012345678",
                     "1f2e3d4c-5b6a-4789-9abc-+ef012345678", "", "-", "------------------------------------"] {
            XCTAssertNil(ReceiptID(text), text)
        }
        var previous: ReceiptID?
        for _ in 0..<200 {
            let uuid = UUID()
            XCTAssertEqual(ReceiptID(uuid.uuidString)?.uuid, uuid)
            XCTAssertEqual(ReceiptID(uuid).text, uuid.uuidString.lowercased())
            // Ordered as their texts are, so a sorted list of ids reads as the catalog's `ORDER BY id`.
            if let previous { XCTAssertEqual(previous < ReceiptID(uuid), previous.text < ReceiptID(uuid).text) }
            previous = ReceiptID(uuid)
        }
    }
}

private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var order: [Int] = []
    private var outstanding = 0
    private(set) var mostAhead = 0

    func made(_ index: Int) {
        lock.lock()
        order.append(index)
        outstanding += 1
        mostAhead = max(mostAhead, outstanding)
        lock.unlock()
    }

    func taken() {
        lock.lock()
        outstanding -= 1
        lock.unlock()
    }
}
