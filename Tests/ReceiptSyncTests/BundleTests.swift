import BlobStore
import Foundation
import NIOHTTP1
import ReceiptServer
import ReceiptSync
import ReceiptWire
import TestSupport
import XCTest

/// Blob bundles (`POST /v1/blobs/bundle`, `POST /v1/blobs/fetch`): the byte format, and the server
/// and client over real HTTP on 127.0.0.1, with the household of `ServerAuthorizationTests`.
extension ServerAuthorizationTests {
    static func bundle(_ blobs: [[UInt8]], addresses: [BlobID]? = nil) -> [UInt8] {
        var out: [UInt8] = []
        for (i, blob) in blobs.enumerated() {
            let id = addresses?[i] ?? SHA256Hasher.hash(blob)
            out += WireBundle.header(sha256: id.digest, length: Int64(blob.count)) + blob
        }
        return out
    }

    /// Reads a whole bundle arriving in pieces of `pieceSize` bytes.
    static func read(_ stream: [UInt8], pieceSize: Int) throws -> (blobs: [(BlobID, [UInt8])], complete: Bool) {
        var reader = WireBundleReader()
        var blobs: [(BlobID, [UInt8])] = []
        for start in stride(from: 0, to: stream.count, by: pieceSize) {
            try stream[start..<min(start + pieceSize, stream.count)].withUnsafeBytes { piece in
                try reader.feed(piece) { event in
                    switch event {
                    case .begin(let digest, _): blobs.append((BlobID(digest: digest), []))
                    case .bytes(let bytes): blobs[blobs.count - 1].1 += Array(bytes)
                    case .end: break
                    }
                }
            }
        }
        return (blobs, reader.atBoundary)
    }

    func testABundleReadsTheSameWhateverPiecesItArrivesIn() throws {
        let blobs = [[], TestData.random(1, seed: 1), TestData.random(39, seed: 2), TestData.random(40, seed: 3),
                     TestData.random(70_001, seed: 4), []]
        let stream = Self.bundle(blobs)
        for pieceSize in [1, 2, 3, 7, 39, 40, 41, 1000, 65_536, stream.count] {
            let (read, complete) = try Self.read(stream, pieceSize: pieceSize)
            XCTAssertTrue(complete, "pieces of \(pieceSize)")
            XCTAssertEqual(read.map(\.1), blobs, "pieces of \(pieceSize)")
            XCTAssertEqual(read.map(\.0), blobs.map { SHA256Hasher.hash($0) })
        }
        // Cut inside a header or inside a blob's bytes: never a complete bundle.
        for cut in [1, 39, 41, 40 + 40 + 1 + 5, stream.count - 1] {
            XCTAssertFalse(try Self.read(Array(stream.prefix(cut)), pieceSize: 5).complete, "cut at \(cut)")
        }
        // A length with its top bit set is no length: refused, not read as a huge or negative size.
        var impossible = WireBundle.header(sha256: SHA256Hasher.hash([]).digest, length: 0)
        impossible[32] = 0x80
        var reader = WireBundleReader()
        XCTAssertThrowsError(try impossible.withUnsafeBytes { try reader.feed($0) { _ in } })
        // Bundles are filled up to the target size and blob count; a larger blob travels alone.
        let sizes: [Int64] = [WireBundle.targetBytes, 1, WireBundle.targetBytes - 1, 1, 5]
        XCTAssertEqual(WireBundle.split(Array(sizes.indices)) { sizes[$0] }, [[0], [1, 2], [3, 4]])
        XCTAssertEqual(WireBundle.split(Array(0..<(WireBundle.maxBlobs + 1))) { _ in 1 }.map(\.count), [WireBundle.maxBlobs, 1])
    }

    /// A bundle is installed whole: every blob under its address and owned by the uploader. One
    /// tampered blob, a cut-off body, or too many blobs, and nothing of the bundle is kept.
    func testABundleIsKeptWholeOrNotAtAll() async throws {
        let s = try await makeSetup()
        let server = s.server
        defer { Task { await server.stop() } }
        let store = BlobStore(root: s.server.data)
        let bob = s.tokens["bob"]
        let blobs = [TestData.random(5_000, seed: 501), [], TestData.random(2_500_000, seed: 502), TestData.random(300, seed: 503)]
        let ids = blobs.map { SHA256Hasher.hash($0) }

        var tampered = blobs
        tampered[2][2_000_000] ^= 0x40
        let refused = try await s.raw.call(.POST, "/v1/blobs/bundle", token: bob, body: Self.bundle(tampered, addresses: ids), json: false)
        XCTAssertEqual(refused.status, 422, refused.text)
        XCTAssertTrue(refused.text.contains(ids[2].hex), refused.text)
        let whole = Self.bundle(blobs)
        let cut = try await s.raw.call(.POST, "/v1/blobs/bundle", token: bob, body: Array(whole.dropLast(7)), json: false)
        XCTAssertEqual(cut.status, 400, cut.text)
        let tooMany = Self.bundle((0...WireBundle.maxBlobs).map { [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)] })
        checkEqual(try await s.raw.call(.POST, "/v1/blobs/bundle", token: bob, body: tooMany, json: false).status, 413)
        for id in ids { XCTAssertFalse(store.contains(id), "\(id) kept from a refused bundle") }
        XCTAssertEqual(try store.interimFiles().count, 0)
        let want = try await s.raw.json(.POST, "/v1/blobs/want", token: bob, WireWantRequest(blobs: ids.map(\.hex)))
        XCTAssertEqual(Set(try JSONDecoder().decode(WireWantResponse.self, from: Data(want.body)).want), Set(ids.map(\.hex)))

        checkEqual(try await s.raw.call(.POST, "/v1/blobs/bundle", token: bob, body: whole, json: false).status, 204)
        for (id, blob) in zip(ids, blobs) {
            var read: [UInt8] = []
            try store.read(id, encoding: .identity) { read += $0 }
            XCTAssertEqual(read, blob)
        }
        XCTAssertEqual(try store.interimFiles().count, 0)
        let after = try await s.raw.json(.POST, "/v1/blobs/want", token: bob, WireWantRequest(blobs: ids.map(\.hex)))
        XCTAssertEqual(try JSONDecoder().decode(WireWantResponse.self, from: Data(after.body)).want, [])
    }

    /// `blobs/fetch` answers a bundle in the order asked, only of blobs the caller may read: one
    /// other blob among them (absent, or not readable) and the answer is 404 naming it.
    func testFetchSendsOnlyWhatTheCallerMayReadInTheOrderAsked() async throws {
        let s = try await makeSetup()
        let server = s.server
        defer { Task { await server.stop() } }
        let alice = s.tokens["alice"]
        let small = TestData.random(4_000, seed: 601)
        let smallID = SHA256Hasher.hash(small).hex
        checkEqual(try await s.raw.call(.POST, "/v1/blobs/bundle", token: alice, body: Self.bundle([small]), json: false).status, 204)
        let push = WirePushRequest(records: [WirePushRecord(id: "4b0e6d8c-5f0a-4c44-9d6e-3f1d2a7b9c05", baseTag: nil,
                                                            receipt: receipt([smallID: small.count], merchant: "Baker"))])
        checkEqual(try await s.raw.json(.POST, "/v1/zones/alice/household/push", token: alice, push).status, 200)

        let asked = WireFetchRequest(blobs: [smallID, s.blobID, smallID])
        for reader in ["alice", "bob", "carol"] {
            let answer = try await s.raw.json(.POST, "/v1/blobs/fetch", token: s.tokens[reader], asked)
            XCTAssertEqual(answer.status, 200, answer.text)
            let (blobs, complete) = try Self.read(answer.body, pieceSize: 10_000)
            XCTAssertTrue(complete)
            XCTAssertEqual(blobs.map(\.0.hex), asked.blobs)
            XCTAssertEqual(blobs.map(\.1), [small, s.blob, small])
        }
        let mallory = try await s.raw.json(.POST, "/v1/blobs/fetch", token: s.tokens["mallory"], WireFetchRequest(blobs: [smallID]))
        XCTAssertEqual(mallory.status, 404)
        let absent = String(repeating: "ab", count: 32)
        let partly = try await s.raw.json(.POST, "/v1/blobs/fetch", token: s.tokens["bob"], WireFetchRequest(blobs: [smallID, absent]))
        XCTAssertEqual(partly.status, 404)
        XCTAssertTrue(partly.text.contains(absent), partly.text)
        let bad = try await s.raw.json(.POST, "/v1/blobs/fetch", token: s.tokens["bob"], WireFetchRequest(blobs: ["../server.sqlite"]))
        XCTAssertEqual(bad.status, 400)
        let many = WireFetchRequest(blobs: Array(repeating: smallID, count: WireBundle.maxBlobs + 1))
        checkEqual(try await s.raw.json(.POST, "/v1/blobs/fetch", token: s.tokens["bob"], many).status, 413)
    }

    /// The client keeps small blobs of a fetched bundle in memory and stages large ones; when the
    /// server's copy of one is corrupt, or cut short, the download fails and leaves no staging file.
    func testADownloadWithACorruptBlobOnTheServerKeepsNothing() async throws {
        let s = try await makeSetup()
        let server = s.server
        defer { Task { await server.stop() } }
        let client = SyncClient(baseURL: s.server.url, token: s.tokens["bob"] ?? "")
        let local = BlobStore(root: s.folder.file("client"))
        try local.prepare()
        let id = try XCTUnwrap(BlobID(hex: s.blobID))

        let fine = try await client.download([id, id], into: local, inMemoryBelow: 400_000)
        XCTAssertEqual(fine.count, 2)
        guard case .bytes(let bytes) = fine[0] else { return XCTFail("a blob below the threshold should stay in memory") }
        XCTAssertEqual(bytes, s.blob)
        let staged = try await client.download([id], into: local, inMemoryBelow: 1000)
        guard case .staged(let file) = staged.first else { return XCTFail("a blob above the threshold should be staged") }
        XCTAssertEqual(file.size, Int64(s.blob.count))
        local.discard(file)

        // Flip one byte of the server's copy (same size): the client checks every blob itself.
        let path = BlobStore(root: s.server.data).path(for: id)
        var onDisk = try XCTUnwrap(FileManager.default.contents(atPath: path))
        onDisk[onDisk.count - 1] ^= 0x01
        try onDisk.write(to: URL(fileURLWithPath: path))
        for threshold: Int64 in [0, 400_000] {
            do {
                _ = try await client.download([id], into: local, inMemoryBelow: threshold)
                XCTFail("a corrupt blob was accepted")
            } catch let error as SyncError {
                XCTAssertTrue(error.message.contains("cut off") || error.message.contains("hash to"), error.message)
            }
        }
        // Cut the server's copy short: the server ends the answer early.
        checkEqual(truncate(path, 1000), 0)
        for threshold: Int64 in [0, 400_000] {
            do {
                _ = try await client.download([id], into: local, inMemoryBelow: threshold)
                XCTFail("a blob cut short was accepted")
            } catch let error as SyncError {
                XCTAssertTrue(error.message.contains("cut off"), error.message)
            }
        }
        XCTAssertEqual(try local.interimFiles().count, 0)
    }
}
