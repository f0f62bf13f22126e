import BlobStore
import Foundation
@testable import ReceiptServer
import ReceiptWire
import TestSupport
import XCTest

/// A zone of the fixture, and what of it no caller who cannot read the zone may ever receive.
struct FixtureZone: Sendable {
    let owner: String
    let name: String
    let receiptID: String
    /// The bytes of the blob its receipt attaches; they carry `blobMarker`.
    let blob: [UInt8]
    let blobHex: String
    /// The receipt's change tag once pushed (the web edit form sends it); nil for the zone that does not exist.
    var changeTag: String?

    init(owner: String, name: String, number: Int) {
        self.owner = owner
        self.name = name
        receiptID = String(format: "abcdef00-0000-4000-8000-%012d", number)
        blob = Array("a receipt scanned in \(name): blob-bytes-of-\(name)\n".utf8) + TestData.random(2048, seed: UInt64(number))
        blobHex = SHA256Hasher.hash(blob).hex
    }

    var label: String { "\(owner)/\(name)" }
    var merchant: String { "merchant-of-\(name)" }
    var blobMarker: String { "blob-bytes-of-\(name)" }
    var textMarker: String { "text-of-\(name)" }
    /// Strings no answer to a caller who cannot read the zone may hold, whatever it asked.
    var secrets: [String] { [merchant, blobMarker, textMarker] }
    /// Strings such an answer may hold only when its request named them (an error names what was asked).
    var names: [String] { [name, receiptID, blobHex] }
}

/// The world every probe runs against: alice owns `home7q` (shared with bob as write) and
/// `taxes7q` (shared with bob as read); carol, an outsider to both, owns `vault7q`. Each zone holds a
/// receipt attaching a blob of its own, with an extracted text. Every account has a bearer token
/// and a web session; alice also has a password. Built once, then copied for each server the test
/// starts (a probe that changed something gets a fresh copy).
final class RouteFixture: @unchecked Sendable {
    static let accounts = ["alice", "bob", "carol"]
    static let password = "correct horse"
    /// A version the server keeps texts of (it refuses any other: TextRoutes.knownVersions).
    static let textVersion = TextRoutes.knownVersions.sorted()[0]
    static let shares: [String: [String: WireRole]] = ["home7q": ["bob": .write], "taxes7q": ["bob": .read]]

    let zones = [FixtureZone(owner: "alice", name: "home7q", number: 1), FixtureZone(owner: "alice", name: "taxes7q", number: 2),
                 FixtureZone(owner: "carol", name: "vault7q", number: 3)]
    /// A zone, receipt and blob that do not exist (a guess).
    let ghost = FixtureZone(owner: "alice", name: "ghost7q", number: 999)
    private(set) var tokens: [String: String] = [:]
    private(set) var cookies: [String: String] = [:]
    private(set) var csrf: [String: String] = [:]
    private(set) var changeTags: [String: String] = [:]
    let folder = TemporaryFolder("receipt-routes")
    /// nil: the embedded catalog; else the PostgreSQL database copied for each server.
    let database: String?
    private var copies = 0

    var template: String { folder.file("template") }
    var targets: [FixtureZone] { zones.map { zone in var z = zone; z.changeTag = changeTags[zone.name]; return z } + [ghost] }

    init(database: String?) { self.database = database }

    /// The role `account` has in `zone`; `.absent` for the zone that does not exist.
    func role(of account: String, in zone: FixtureZone) -> Role {
        if zone.name == ghost.name { return .absent }
        if zone.owner == account { return .owner }
        switch Self.shares[zone.name]?[account] {
        case .write?: return .write
        case .read?: return .read
        default: return .outsider
        }
    }

    /// What `caller` must never receive (`secrets`), and what only when it asked (`names`).
    func forbidden(for caller: Caller) -> (secrets: [String], names: [String]) {
        let hidden = zones.filter { zone in caller.account.map { [.owner, .write, .read].contains(role(of: $0, in: zone)) } != true }
        return (hidden.flatMap(\.secrets), hidden.flatMap(\.names))
    }

    func build() async throws {
        let store = try await ServerDatabase(database).open(dataPath: template)
        do {
            try await populate(store)
            try await store.close()
        } catch {
            try? await store.close()
            throw error
        }
    }

    private func populate(_ store: any ServerStore) async throws {
        var members: [String: Account] = [:]
        for name in Self.accounts {
            let token = try await store.addAccount(name, quota: nil)
            tokens[name] = token
            let account = try await store.authenticate(token: token)
            members[name] = try XCTUnwrap(account)
        }
        // Before the sessions are opened: a new password ends the account's sessions.
        try await store.setPassword(account: "alice", password: Self.password)
        let web = try XCTUnwrap(store as? any WebStore)
        for name in Self.accounts {
            let session = try await web.openSession(for: try XCTUnwrap(members[name]))
            cookies[name] = session
            let opened = try await web.session(session)
            csrf[name] = try XCTUnwrap(opened).csrf
        }
        for zone in zones {
            let owner = try XCTUnwrap(members[zone.owner])
            _ = try await store.createZone(owner: zone.owner, name: zone.name, caller: owner)
            let incoming = try store.blobs.incoming()
            try zone.blob.withUnsafeBytes { try incoming.append($0) }
            try await store.installUploads([try incoming.finish(expected: try XCTUnwrap(BlobID(hex: zone.blobHex)))], caller: owner)
            let receipt = WireReceipt(merchant: zone.merchant, total: "12.34", currency: "EUR", attachments: [
                WireAttachment(sha256: zone.blobHex, size: Int64(zone.blob.count), filename: "scan.bin", mediaType: "application/octet-stream"),
            ], createdAt: 1, modifiedAt: 1)
            let pushed = try await store.push(WirePushRequest(records: [WirePushRecord(id: zone.receiptID, baseTag: nil, receipt: receipt)]),
                                              owner: zone.owner, name: zone.name, caller: owner)
            XCTAssertEqual(pushed.results.map(\.status), [.saved], "the fixture's receipt of \(zone.label)")
            changeTags[zone.name] = pushed.results.first?.changeTag
            try await store.putText(zone.blobHex, version: Self.textVersion, WireText(text: "words \(zone.textMarker)", failed: nil),
                                    caller: owner)
            for (account, role) in Self.shares[zone.name] ?? [:] {
                try await store.share(owner: zone.owner, name: zone.name, with: account, role: role, caller: owner)
            }
        }
    }

    /// A fresh copy of the world, opened: the data folder copied, and for PostgreSQL a database
    /// made from the template one.
    func copy() async throws -> any ServerStore {
        copies += 1
        let data = folder.file("copy-\(copies)")
        try FileManager.default.copyItem(atPath: template, toPath: data)
        guard let database else { return try await ServerDatabase(nil).open(dataPath: data) }
        let (base, name) = try Self.split(database)
        let copy = "\(name)_copy\(copies)"
        try PostgresCluster.shared().psql(base + "postgres", "CREATE DATABASE \(copy) TEMPLATE \(name)")
        return try await ServerDatabase(base + copy).open(dataPath: data)
    }

    /// `postgres://USER@HOST:PORT/` and the database name of a URL.
    static func split(_ url: String) throws -> (String, String) {
        guard let slash = url.lastIndex(of: "/") else { throw FixtureError("not a database URL: \(url)") }
        return (String(url[...slash]), String(url[url.index(after: slash)...]))
    }
}

struct FixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A caller's role in the zone a probe names.
enum Role: String, Sendable {
    case owner, write, read, outsider, absent
}

/// Who sends a probe.
enum Caller: Hashable, Sendable, CustomStringConvertible {
    /// An account, with its credential for the surface probed (a bearer token on `/v1`, the session
    /// cookie and CSRF token on the web view).
    case member(String)
    case signedOut
    /// An account with only its credential of the other surface: a session cookie on `/v1`, a
    /// bearer token on the web view. Each surface must take it as signed out.
    case otherSurface(String)

    var account: String? {
        if case .member(let name) = self { return name }
        return nil
    }

    var description: String {
        switch self {
        case .member(let name): return name
        case .signedOut: return "signed out"
        case .otherSurface(let name): return "\(name) with the other surface's credential"
        }
    }
}
