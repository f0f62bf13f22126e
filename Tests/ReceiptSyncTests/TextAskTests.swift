import BlobStore
import Foundation
import ReceiptServer
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// When a sync asks the server for texts (docs/PROTOCOL.md, "Extracted text"): about every pending
/// blob only after the account's text counter moved; about blobs new to the vault, or taken by the
/// server for the first time, always. And a text offered before the server let the account read its
/// blob is offered again once it does. Request counts come from the server's own access log.
class TextAskTests: HouseholdTestCase {
    /// Files of distinct text, pending in every vault that imports them with `--no-index`.
    static let pendingCount = 300

    func testAOneEditSyncAsksForNoTextUntilAMemberStoresOne() async throws {
        let h = try await LoggedHousehold.start(["alice", "bob", "carol"])
        defer { h.stop() }
        let alice = h["alice"], bob = h["bob"], carol = h["carol"]
        var shared: (path: String, sha256: String) = ("", "")
        for i in 0..<Self.pendingCount {
            let bytes = Array("receipt \(i) of the household\nTOTAL \(i).00\n".utf8)
            let path = try h.folder.write("files/many/r\(i).txt", bytes)
            if i == 7 { shared = (path, SHA256Hasher.hash(bytes).hex) }
        }
        try await alice.ok(["zone", "create", "household"])
        try await alice.ok(["import", h.folder.file("files/many"), "--zone", "household", "--no-index"])
        try await alice.ok(["share", "household", "bob", "--role", "write"])
        try await alice.ok(["share", "household", "carol", "--role", "read"])
        checkEqual(try await alice.sync()["pushed"] as? Int, Self.pendingCount)
        checkEqual(try await bob.sync()["pulled"] as? Int, Self.pendingCount)

        // One edit, synced both ways: no text was stored meanwhile, so no text is asked about.
        let ids = try await alice.receipts().keys
        let id = try XCTUnwrap(ids.first)
        try await alice.ok(["edit", id, "--note", "one edit"])
        var mark = h.logLines().count
        checkEqual(try await alice.sync()["pushed"] as? Int, 1)
        checkEqual(try await bob.sync()["pulled"] as? Int, 1)
        var lines = h.logLines().dropFirst(mark)
        checkEqual(lines.filter { $0.route == "/v1/account" }.count, 2, "\(lines)")
        checkEqual(lines.filter { $0.route == "/v1/text/fetch" }.count, 0, "\(lines)")

        // Carol, who reads the household's zone, imports the same bytes as one of its files into her
        // own and extracts their text: it is kept for her and for alice, whose zone she reads (never
        // for a household she is not in), and storing it moves the counters of alice and bob, whose
        // next syncs ask and take it.
        try await carol.ok(["import", shared.path])
        checkEqual(try await carol.sync()["textsUploaded"] as? Int, 1)
        mark = h.logLines().count
        checkEqual(try await bob.sync()["textsDownloaded"] as? Int, 1)
        lines = h.logLines().dropFirst(mark)
        checkTrue(lines.contains { $0.route == "/v1/text/fetch" && $0.account == "bob" }, "\(lines)")
        checkEqual(try await alice.sync()["textsDownloaded"] as? Int, 1)
        checkEqual(try await bob.ok(["stats", "--json"]).json.flatMap { ($0 as? [String: Any])?["pendingIndex"] as? Int },
                   Self.pendingCount - 1)

        // Nothing stored since: the next syncs neither ask again nor offer the server its own text back.
        mark = h.logLines().count
        _ = try await bob.sync()
        _ = try await alice.sync()
        lines = h.logLines().dropFirst(mark)
        checkEqual(lines.filter { $0.route.hasPrefix("/v1/text") }.count, 0, "\(lines)")
    }

    func testABlobNewToTheVaultIsAskedAboutWithoutTheCounterMoving() async throws {
        let h = try await LoggedHousehold.start(["alice", "carol"])
        defer { h.stop() }
        let alice = h["alice"], carol = h["carol"]
        let bytes = Array("HARDWARE STORE\nhinges 4x\nTOTAL 12.80\n".utf8)
        let path = try h.folder.write("files/hardware.txt", bytes)
        // Carol reads alice's zone "household", which holds the bytes with their text.
        try await alice.ok(["zone", "create", "household"])
        try await alice.ok(["share", "household", "carol", "--role", "read"])
        try await alice.ok(["import", path, "--zone", "household"])
        checkEqual(try await alice.sync()["textsUploaded"] as? Int, 1)
        // Carol has synced her own zone only (her counter is known) with a pending blob of her own.
        try await carol.ok(["import", try h.folder.write("files/other.txt", Array("other\n".utf8)), "--no-index"])
        try await carol.ok(["sync", "--zone", "personal"])
        let mark = h.logLines().count
        // The same bytes, imported by carol: nobody stored a text she could read meanwhile, yet the
        // blob is new to her vault, so her sync asks about it (and only it) and takes alice's text.
        try await carol.ok(["import", path, "--no-index"])
        checkEqual(try await carol.ok(["sync", "--zone", "personal", "--json"]).json.flatMap {
            ($0 as? [String: Any])?["textsDownloaded"] as? Int }, 1)
        checkEqual(h.logLines().dropFirst(mark).filter { $0.route == "/v1/text/fetch" }.count, 1)
        let found = try await carol.ok(["search", "hinges", "--json"]).json as? [[String: Any]]
        checkEqual(found?.count, 1)
    }

    /// Texts travel in uploads of many (`POST /v1/text/put`): at most 256 texts and about 1 MiB of
    /// text each, never one request per text; the member who pulls takes every one of them.
    func testTextsTravelInUploadsOfMany() async throws {
        let h = try await LoggedHousehold.start(["alice", "bob"])
        defer { h.stop() }
        let alice = h["alice"], bob = h["bob"]
        for i in 0..<Self.pendingCount {
            _ = try h.folder.write("files/many/r\(i).txt", Array("receipt \(i) of the household\nTOTAL \(i).00\n".utf8))
        }
        // Two texts of 0.6 MiB: no upload may carry both.
        let line = "sourdough loaf 4.20 flat white 3.10\n"
        for word in ["zeppelin", "quokka"] {
            let text = String(repeating: line, count: (6 << 20) / 10 / line.utf8.count) + word + "\n"
            _ = try h.folder.write("files/many/\(word).txt", Array(text.utf8))
        }
        try await alice.ok(["zone", "create", "household"])
        try await alice.ok(["import", h.folder.file("files/many"), "--zone", "household"])
        try await alice.ok(["share", "household", "bob", "--role", "read"])
        let mark = h.logLines().count
        checkEqual(try await alice.sync()["textsUploaded"] as? Int, Self.pendingCount + 2)
        let lines = h.logLines().dropFirst(mark)
        let uploads = lines.filter { $0.route == "/v1/text/put" }
        // 302 texts offered in two rounds of `want` (256 + 46); the round with both long texts splits.
        checkTrue((2...3).contains(uploads.count), "\(lines)")
        checkEqual(lines.filter { $0.method == "PUT" && $0.route.hasPrefix("/v1/text") }.count, 0, "\(lines)")
        for upload in uploads { checkTrue((upload.bytesIn ?? 0) < (12 << 20) / 10, "an upload of \(upload.bytesIn ?? 0) bytes") }
        let pulled = try await bob.sync()
        checkEqual(pulled["textsDownloaded"] as? Int, Self.pendingCount + 2)
        checkEqual(try await bob.ok(["index", "--json"]).json.flatMap { ($0 as? [String: Any])?["extracted"] as? Int }, 0)
        let found = try await bob.ok(["search", "quokka", "--json"]).json as? [[String: Any]]
        checkEqual(found?.count, 1)
    }

    func testATextOfferedBeforeTheServerHeldItsBlobIsOfferedAgainOnceItDoes() async throws {
        let h = try await LoggedHousehold.start(["alice", "bob"])
        defer { h.stop() }
        let alice = h["alice"], bob = h["bob"]
        try await alice.ok(["zone", "create", "later"])
        try await alice.ok(["share", "later", "bob", "--role", "read"])
        let path = try h.folder.write("files/pharmacy.txt", Array("CVS PHARMACY\namoxicillin\n".utf8))
        try await alice.ok(["import", path, "--zone", "later"])
        // A sync of another zone offers the text, but the receipt (and so the blob) is not on the server.
        checkEqual(try await alice.ok(["sync", "--zone", "personal", "--json"]).json.flatMap {
            ($0 as? [String: Any])?["textsUploaded"] as? Int }, 0)
        // The receipt reaches the server: its text is offered again and taken.
        let synced = try await alice.sync()
        checkEqual(synced["pushed"] as? Int, 1)
        checkEqual(synced["textsUploaded"] as? Int, 1)
        checkEqual(try await bob.sync()["textsDownloaded"] as? Int, 1)
        checkEqual(try await alice.sync()["textsUploaded"] as? Int, 0, "offered again only once")
    }
}

/// The same with the server's catalog in PostgreSQL.
final class PostgresTextAskTests: TextAskTests {
    override class var postgres: Bool { true }

    /// (A test of its own also makes XCTest on Linux find the inherited ones.)
    func testTheCounterIsARowPerAccountMovedWithTheText() async throws {
        let h = try await Household.start(["alice", "bob"])
        defer { Task { await h.shutdown() } }
        try await h["alice"].ok(["zone", "create", "household"])
        try await h["alice"].ok(["share", "household", "bob", "--role", "read"])
        try await h["alice"].ok(["import", try h.folder.write("files/a.txt", Array("hardware store\n".utf8)), "--zone", "household"])
        checkEqual(try await h["alice"].sync()["textsUploaded"] as? Int, 1)
        let url = try XCTUnwrap(Household.database)
        let rows = try PostgresCluster.shared().psql(url, """
            SELECT string_agg(a.name || ':' || t.seq, ',' ORDER BY a.name) FROM text_seqs t JOIN accounts a ON a.id = t.account_id
            """)
        // Bob's counter moved twice: given the zone, then its text.
        XCTAssertEqual(rows.trimmingCharacters(in: .whitespacesAndNewlines), "alice:1,bob:2")
    }
}

/// A household whose server is a `receipt server run` process, so its access log (one JSON line per
/// request on stderr) says which requests each sync made.
final class LoggedHousehold: @unchecked Sendable {
    struct Line: Decodable, CustomStringConvertible {
        let account: String?
        let method: String
        let route: String
        let bytesIn: Int?
        var description: String { "\(account ?? "-") \(method) \(route)" }
    }

    let folder = TemporaryFolder("receipt-textask")
    var server: Process?
    var output = ""
    var members: [String: Member] = [:]

    static func start(_ names: [String]) async throws -> LoggedHousehold {
        let h = LoggedHousehold()
        let data = h.folder.file("server")
        var tokens: [String: String] = [:]
        for name in names { tokens[name] = try await TestServer.addAccount(name, data: data) }
        h.output = h.folder.file("server-run")
        let database = Household.database.map { ["--database", $0] } ?? []
        let server = try CLI.start(["server", "run", "--data", data, "--listen", "127.0.0.1:0", "--json"] + database, output: h.output)
        h.server = server
        let url = try await TLSTests.listeningURL(h.output, server)
        for name in names {
            let member = Member(name: name, token: tokens[name] ?? "", vault: h.folder.file("vault-" + name), folder: h.folder)
            try await member.ok(["init"])
            try await member.ok(["remote", "set", url, "--account", name, "--token", member.token])
            h.members[name] = member
        }
        return h
    }

    subscript(_ name: String) -> Member {
        guard let m = members[name] else { fatalError("no member \(name) in this test household") }
        return m
    }

    /// The access log so far. A request's line is written before its answer is sent, so every
    /// request a finished command made is there.
    func logLines() -> [Line] {
        let text = (try? String(contentsOfFile: output + ".err", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONDecoder().decode(Line.self, from: Data($0.utf8)) }
    }

    func stop() {
        if let server, server.isRunning { kill(server.processIdentifier, SIGKILL) }
    }
}
