import BlobStore
import Foundation
import ReceiptServer
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The household sync tests again, with the server's catalog in a real PostgreSQL.
final class PostgresHouseholdSyncTests: HouseholdSyncTests {
    override class var postgres: Bool { true }

    /// The household's catalog is in PostgreSQL: no server.sqlite in the data folder, the accounts in the database.
    func testTheHouseholdsCatalogIsInPostgreSQL() async throws {
        let h = try await Household.start(["alice", "bob"])
        defer { Task { await h.shutdown() } }
        XCTAssertFalse(FileManager.default.fileExists(atPath: h.server.data + "/" + ServerCatalog.fileName))
        let url = try XCTUnwrap(Household.database)
        let names = try PostgresCluster.shared().psql(url, "SELECT string_agg(name, ',' ORDER BY name) FROM accounts")
        XCTAssertEqual(names.trimmingCharacters(in: .whitespacesAndNewlines), "alice,bob")
    }
}

/// Several `receipt server run` processes over one PostgreSQL database and one data folder.
final class PostgresMultiProcessTests: XCTestCase {
    /// A `receipt server run --database` child process and its port.
    struct ServerProcess {
        let process: Process
        let url: String
    }

    func startServer(database: String, data: String, folder: TemporaryFolder) async throws -> ServerProcess {
        let output = folder.file("server-" + SecureRandom.hex(4))
        let process = try CLI.start(["server", "run", "--database", database, "--data", data, "--listen", "127.0.0.1:0", "--json"],
                                    output: output)
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            let text = (try? String(contentsOfFile: output + ".out", encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first,
               let json = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
               let url = json["url"] as? String {
                return ServerProcess(process: process, url: url)
            }
            guard process.isRunning else {
                let err = (try? String(contentsOfFile: output + ".err", encoding: .utf8)) ?? ""
                throw HarnessError("receipt server run stopped before it listened: \(err)")
            }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        process.terminate()
        throw HarnessError("receipt server run did not listen within 120 s")
    }

    func stop(_ server: ServerProcess, signal: Int32 = SIGTERM) async -> Int32 {
        kill(server.process.processIdentifier, signal)
        while server.process.isRunning { try? await Task.sleep(nanoseconds: 10_000_000) }
        return server.process.terminationStatus
    }

    /// Members spread across two processes converge; a process killed with SIGKILL in the middle of
    /// a push loses nothing it acknowledged (the pusher finishes through the other process, and every
    /// receipt arrives once); SIGTERM stops the other cleanly.
    func testTwoProcessesActAsOneServerAndSIGKILLLosesNothingAcknowledged() async throws {
        let database = try PostgresCluster.shared().createDatabase()
        let folder = TemporaryFolder("receipt-pg-multi")
        let data = folder.file("server")
        // Accounts through the CLI, as a provider makes them.
        var tokens: [String: String] = [:]
        for name in ["alice", "bob"] {
            let made = try await CLI.run(["server", "account-add", name, "--database", database, "--data", data, "--json"], in: folder)
            XCTAssertEqual(made.status, 0, made.stderr)
            tokens[name] = (made.json as? [String: Any])?["token"] as? String
        }
        let first = try await startServer(database: database, data: data, folder: folder)
        let second = try await startServer(database: database, data: data, folder: folder)
        let alice = Member(name: "alice", token: tokens["alice"] ?? "", vault: folder.file("vault-alice"), folder: folder)
        let bob = Member(name: "bob", token: tokens["bob"] ?? "", vault: folder.file("vault-bob"), folder: folder)
        for (member, server) in [(alice, first), (bob, second)] {
            try await member.ok(["init", "--inline-threshold", "1024"])
            try await member.ok(["remote", "set", server.url, "--account", member.name, "--token", member.token])
        }
        try await alice.ok(["zone", "create", "household"])
        try await alice.ok(["share", "household", "bob", "--role", "write"])
        var expected: Set<String> = []
        for n in 0..<3 {
            let bytes = TestData.random(20_000 + n, seed: UInt64(n))
            let path = try folder.write("files/first-\(n).bin", bytes)
            expected.insert(importedID(try await alice.ok(["import", path, "--zone", "household", "--json"])))
        }
        _ = try await alice.sync()
        _ = try await bob.sync()
        let bobsFirst = try await bob.receipts()
        XCTAssertEqual(Set(bobsFirst.keys), expected)
        // Bob edits through the second process; alice sees it through the first.
        let edited = try XCTUnwrap(expected.first)
        try await bob.ok(["edit", edited, "--merchant", "Edited by bob"])
        _ = try await bob.sync()
        _ = try await alice.sync()
        let alices = try await alice.receipts()
        XCTAssertEqual(alices[edited]?["merchant"] as? String, "Edited by bob")

        // Many receipts, pushed through the first process, which is killed while the sync runs.
        for n in 0..<60 {
            let path = try folder.write("files/many-\(n).bin", TestData.random(30_000, seed: UInt64(1000 + n)))
            expected.insert(importedID(try await alice.ok(["import", path, "--zone", "household", "--json"])))
        }
        let output = folder.file("sync-killed")
        let sync = try CLI.start(["sync", "--json", "--vault", alice.vault], output: output)
        // Killed once the push has begun landing (more records than before it), or when it ended first.
        let cluster = try PostgresCluster.shared()
        let deadline = Date().addingTimeInterval(120)
        while sync.isRunning && Date() < deadline {
            if let n = Int(try cluster.psql(database, "SELECT count(*) FROM records").trimmingCharacters(in: .whitespacesAndNewlines)),
               n > 3 { break }
            try await Task.sleep(nanoseconds: 5_000_000)
        }
        let killed = await stop(first, signal: SIGKILL)
        XCTAssertEqual(killed, SIGKILL)
        _ = await CLI.wait(sync, output: output)
        // Alice carries on through the second process: every receipt arrives, none twice.
        try await alice.ok(["remote", "set", second.url, "--account", "alice", "--token", alice.token])
        _ = try await alice.sync()
        _ = try await bob.sync()
        let bobs = try await bob.receipts()
        XCTAssertEqual(Set(bobs.keys), expected)
        XCTAssertEqual(bobs.count, expected.count)
        try await bob.ok(["fsck"])
        let stopped = await stop(second)
        XCTAssertEqual(stopped, 0, "SIGTERM stops a server cleanly")
    }
}
