import Foundation
@testable import ReceiptServer
import ReceiptWire
import XCTest

/// A request's task may be cancelled at any await of a rules transaction (a client that hangs up):
/// the transaction must end, committed or rolled back whole, and the next writer must find the
/// store as writable as before (SQLite runs its statements and its ends outside the request's
/// cancellation, Store/SQLite/SQLitePool.swift).
extension ServerStoreConformanceTests {
    func testCancelledPushesLeaveNoTransactionOpen() async throws {
        let store = try await openStore()
        let alice = try await account(store, "alice")
        _ = try await store.createZone(owner: "alice", name: "household", caller: alice)
        let ids = (0..<24).map { _ in UUID().uuidString.lowercased() }
        let grocer = receipt("Grocer")
        let pushes = ids.map { id in
            Task { [store] in
                try await store.push(WirePushRequest(records: [WirePushRecord(id: id, baseTag: nil, receipt: grocer)]),
                                     owner: "alice", name: "household", caller: alice)
            }
        }
        for push in pushes.reversed() { push.cancel() }
        var saved: Set<String> = []
        for (id, push) in zip(ids, pushes) {
            if let answer = try? await push.value, answer.results.first?.status == .saved { saved.insert(id) }
        }
        // The store still takes writes, and every push answered as saved is there once.
        let last = UUID().uuidString.lowercased()
        let after = try await store.push(WirePushRequest(records: [WirePushRecord(id: last, baseTag: nil, receipt: receipt("Baker"))]),
                                         owner: "alice", name: "household", caller: alice)
        XCTAssertEqual(after.results.first?.status, .saved)
        let pulled = try await store.changes(owner: "alice", name: "household", since: nil, limit: 100, caller: alice)
        let pulledIDs = pulled.records.map(\.id)
        XCTAssertEqual(pulledIDs.count, Set(pulledIDs).count, "a record listed twice")
        XCTAssertTrue(saved.union([last]).isSubset(of: Set(pulledIDs)), "a push answered as saved is missing")
        XCTAssertEqual(pulledIDs.last, last)
    }
}
