import Foundation
@testable import ReceiptServer
import ReceiptWire
import XCTest

/// A receipt id is a UUID: case-insensitive on input, lowercase on output (RFC 9562). The server
/// reads a pushed id at its door and keeps it lowercase, so a record pushed with an upper-case id is
/// the same record as with the lowercase one, on both stores.
extension ServerStoreConformanceTests {
    func testARecordIsOneRecordWhateverTheCaseOfItsID() async throws {
        let store = try await openStore()
        let alice = try await account(store, "alice")
        _ = try await store.createZone(owner: "alice", name: "household", caller: alice)
        func push(_ id: String, base: String?, _ merchant: String) async throws -> WirePushResult? {
            try await store.push(WirePushRequest(records: [WirePushRecord(id: id, baseTag: base, receipt: receipt(merchant))]),
                                 owner: "alice", name: "household", caller: alice).results.first
        }
        let upper = Self.recordID.uppercased()
        let first = try await push(upper, base: nil, "Grocer")
        XCTAssertEqual(first?.status, .saved)
        let pulled = try await store.changes(owner: "alice", name: "household", since: nil, limit: 10, caller: alice)
        XCTAssertEqual(pulled.records.map(\.id), [Self.recordID], "the id comes back lowercase")
        let tag = try XCTUnwrap(pulled.records.first?.changeTag)
        let update = try await push(Self.recordID, base: tag, "Baker")
        XCTAssertEqual(update?.status, .saved, "the lowercase id with the pulled tag updates the record")
        // The upper-case id without a base tag is that same record again: a conflict, not a second record.
        let again = try await push(upper, base: nil, "Other")
        XCTAssertEqual(again?.status, .conflict)
        XCTAssertEqual(again?.id, Self.recordID)
        XCTAssertEqual(again?.server?.changeTag, update?.changeTag)
        let all = try await store.changes(owner: "alice", name: "household", since: nil, limit: 10, caller: alice)
        XCTAssertEqual(all.records.map(\.id), [Self.recordID])
        XCTAssertEqual(all.records.map(\.receipt?.merchant), ["Baker"])
    }
}
