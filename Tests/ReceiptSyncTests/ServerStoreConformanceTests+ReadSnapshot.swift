import Foundation
@testable import ReceiptServer
import ReceiptWire
import XCTest

/// A read transaction is one snapshot: a pull or a web page whose statements straddle a push sees
/// the catalog either before it or after it, never both (SQLite holds one reader connection in one
/// read transaction, PostgreSQL runs REPEATABLE READ).
extension ServerStoreConformanceTests {
    func testReadTransactionSeesOneSnapshotAcrossAConcurrentCommit() async throws {
        let store = try await openStore()
        let alice = try await account(store, "alice")
        _ = try await store.createZone(owner: "alice", name: "household", caller: alice)
        let (before, after) = try await store.transaction(.read) { read in
            let ownerID = try await read.accountID(named: "alice")
            let owner = try XCTUnwrap(ownerID)
            let firstZone = try await read.zone(owner: "alice", name: "household", account: owner, lock: false)
            let first = try XCTUnwrap(firstZone)
            let firstChanges = try await read.changes(zone: first.id, after: 0, limit: 100).count
            // A push commits, awaited to its end, while this read transaction is still open.
            let pushed = try await store.push(WirePushRequest(records: [WirePushRecord(id: Self.recordID, baseTag: nil, receipt: receipt("Grocer"))]),
                                              owner: "alice", name: "household", caller: alice)
            XCTAssertEqual(pushed.results.first?.status, .saved)
            let secondZone = try await read.zone(owner: "alice", name: "household", account: owner, lock: false)
            let second = try XCTUnwrap(secondZone)
            let secondChanges = try await read.changes(zone: second.id, after: 0, limit: 100).count
            return ([first.seq, Int64(firstChanges)], [second.seq, Int64(secondChanges)])
        }
        XCTAssertEqual(before, [0, 0])
        XCTAssertEqual(after, before, "a read transaction saw a push that committed after its first read")
        let pulled = try await store.changes(owner: "alice", name: "household", since: nil, limit: 100, caller: alice)
        XCTAssertEqual(pulled.records.map(\.id), [Self.recordID], "the next read transaction sees the push")
    }

    /// Read transactions cancelled while open leave no connection held nor any transaction open on
    /// a connection reused later: a write proceeds, and every later read sees it.
    func testCancelledReadTransactionsLeaveNothingHeld() async throws {
        let store = try await openStore()
        let alice = try await account(store, "alice")
        _ = try await store.createZone(owner: "alice", name: "household", caller: alice)
        let (entered, enter) = AsyncStream<Void>.makeStream()
        let reads = (0..<4).map { _ in
            Task { [store] in
                try await store.transaction(.read) { read in
                    _ = try await read.accountID(named: "alice")
                    enter.yield()
                    let (never, _) = AsyncStream<Void>.makeStream()
                    for await _ in never {}  // ends when the task is cancelled
                    try Task.checkCancellation()
                }
            }
        }
        var open = 0
        for await _ in entered {
            open += 1
            if open == reads.count { break }
        }
        for read in reads { read.cancel() }
        for read in reads { _ = await read.result }
        let pushed = try await store.push(WirePushRequest(records: [WirePushRecord(id: Self.recordID, baseTag: nil, receipt: receipt("Grocer"))]),
                                          owner: "alice", name: "household", caller: alice)
        XCTAssertEqual(pushed.results.first?.status, .saved)
        // More reads than any store keeps connections: each connection a cancelled read held is reused.
        for _ in 0..<16 {
            let pulled = try await store.changes(owner: "alice", name: "household", since: nil, limit: 100, caller: alice)
            XCTAssertEqual(pulled.records.map(\.id), [Self.recordID])
        }
    }
}
