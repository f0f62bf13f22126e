import BlobStore
import Foundation
import TestSupport
import XCTest

final class BlobStoreTests: XCTestCase {
    var folder: TemporaryFolder!
    var store: BlobStore!

    override func setUpWithError() throws {
        folder = TemporaryFolder()
        store = BlobStore(root: folder.path)
        try store.prepare()
    }

    func readAll(_ id: BlobID, _ encoding: BlobEncoding) throws -> [UInt8] {
        var out: [UInt8] = []
        try store.read(id, encoding: encoding) { out.append(contentsOf: $0) }
        return out
    }

    func write(_ bytes: [UInt8], _ mode: CompressionMode) throws -> StoredBlob {
        let path = try folder.write("input-\(UUID().uuidString)", bytes)
        return try FileDescriptor.with(path, O_RDONLY) { try store.write(from: $0, compression: mode) }
    }

    func testAddressIsSHA256OfOriginalBytes() throws {
        // The known SHA-256 of "abc".
        XCTAssertEqual(SHA256Hasher.hash(Array("abc".utf8)).hex,
                       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let text = TestData.text(300_000)
        let stored = try write(text, .xz)
        XCTAssertEqual(stored.id.hex, TestData.sha256(text))
        XCTAssertTrue(FileManager.default.fileExists(atPath: store.path(for: stored.id)))
        XCTAssertTrue(store.path(for: stored.id).hasSuffix("/blobs/\(stored.id.hex.prefix(2))/\(stored.id.hex)"))
    }

    /// An address is read from exactly 64 hexadecimal digits, either case, and from nothing else:
    /// every byte value at every position, and every length around 64.
    func testAnAddressIsReadFromSixtyFourHexDigitsAndNothingElse() {
        let known = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        XCTAssertEqual(BlobID(hex: known)?.hex, known)
        XCTAssertEqual(BlobID(hex: known.uppercased())?.hex, known)
        let digits = Set("0123456789abcdefABCDEF".utf8)
        for position in 0..<64 {
            for byte in UInt8.min...UInt8.max {
                var bytes = Array(known.utf8)
                bytes[position] = byte
                let id = bytes.withUnsafeBufferPointer { BlobID(hexDigits: $0) }
                if digits.contains(byte) {
                    XCTAssertEqual(id?.hex, String(decoding: bytes, as: UTF8.self).lowercased())
                } else {
                    XCTAssertNil(id, "byte \(byte) at \(position)")
                }
            }
        }
        for length in [0, 1, 63, 65, 128] {
            XCTAssertNil(BlobID(hex: String(repeating: "a", count: length)))
        }
    }

    func testRoundTripEveryCompressionMode() throws {
        let inputs: [(String, [UInt8])] = [
            ("empty", []), ("small", Array("hello".utf8)), ("text", TestData.text(3_000_000)),
            ("random", TestData.random(2_500_000, seed: 7)),
        ]
        for mode in CompressionMode.allCases {
            for (label, bytes) in inputs {
                let stored = try write(bytes, mode)
                XCTAssertEqual(stored.size, Int64(bytes.count), "\(mode) \(label)")
                XCTAssertEqual(try readAll(stored.id, stored.encoding), bytes, "\(mode) \(label)")
                XCTAssertEqual(try store.detectEncoding(stored.id), stored.encoding, "\(mode) \(label)")
                try store.remove([stored.id])
            }
        }
    }

    func testAutoCompressesTextButNotRandomOrJPEG() throws {
        let text = try write(TestData.text(2_000_000), .auto)
        XCTAssertEqual(text.encoding, .xz)
        XCTAssertLessThan(text.storedSize, text.size / 2)
        let random = try write(TestData.random(2_000_000, seed: 1), .auto)
        XCTAssertEqual(random.encoding, .identity)
        XCTAssertEqual(random.storedSize, random.size)
        // A JPEG header in front of text-like bytes is still not run through xz: decided by magic bytes.
        let jpeg = try write([0xFF, 0xD8, 0xFF, 0xE0] + TestData.text(600_000), .auto)
        XCTAssertEqual(jpeg.encoding, .identity)
        // Compressible head, random body: xz is tried, does not save 10 %, the original is kept.
        let mixed = try write(TestData.text(200_000) + TestData.random(3_000_000, seed: 3), .auto)
        XCTAssertEqual(mixed.encoding, .identity)
        XCTAssertEqual(try readAll(mixed.id, mixed.encoding).count, 3_200_000)
    }

    /// `auto` estimates a large file from chunks spread over it, not from its head alone: text behind a
    /// random first MiB is compressed, random bytes behind a text head are not.
    func testAutoJudgesALargeFileByItsWholeLengthNotItsHead() throws {
        let text = try write(TestData.random(1 << 20, seed: 4) + TestData.text(20 << 20), .auto)
        XCTAssertEqual(text.encoding, .xz)
        let random = try write(TestData.text(1 << 20) + TestData.random(20 << 20, seed: 5), .auto)
        XCTAssertEqual(random.encoding, .identity)
        XCTAssertEqual(try readAll(random.id, random.encoding).count, 21 << 20)
    }

    func testEqualContentIsStoredOnceAndDedupReported() throws {
        let bytes = TestData.random(500_000, seed: 9)
        let first = try write(bytes, .none)
        let second = try write(bytes, .none)
        XCTAssertFalse(first.deduplicated)
        XCTAssertTrue(second.deduplicated)
        XCTAssertEqual(try store.enumerate().count, 1)
        XCTAssertEqual(try store.interimFiles().count, 0, "no staging file is left behind")
    }

    func testDedupOfEqualContentWrittenByTwoTasksAtOnce() async throws {
        let bytes = TestData.random(4_000_000, seed: 11)
        let path = try folder.write("same", bytes)
        let store = self.store!
        let results = try await withThrowingTaskGroup(of: StoredBlob.self) { group in
            for _ in 0..<4 {
                group.addTask { try FileDescriptor.with(path, O_RDONLY) { try store.write(from: $0, compression: .none) } }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(Set(results.map(\.id)).count, 1)
        XCTAssertEqual(try store.enumerate().count, 1)
        XCTAssertEqual(try store.interimFiles().count, 0)
        XCTAssertEqual(try readAll(results[0].id, .identity), bytes)
    }

    func testFlippedByteIsDetectedOnRead() throws {
        for mode in [CompressionMode.none, .xz] {
            let stored = try write(TestData.text(400_000, seed: mode == .xz ? 1 : 2), mode)
            let path = store.path(for: stored.id)
            var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            bytes[bytes.count / 2] ^= 0x01
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            XCTAssertThrowsError(try readAll(stored.id, stored.encoding), "\(mode)") { error in
                guard case BlobError.corrupt(let id, _) = error else { return XCTFail("not corrupt: \(error)") }
                XCTAssertEqual(id, stored.id)
            }
            XCTAssertNil(try store.detectEncoding(stored.id))
        }
    }

    func testTruncatedBlobIsDetectedOnRead() throws {
        for mode in [CompressionMode.none, .xz] {
            let stored = try write(TestData.text(400_000, seed: mode == .xz ? 3 : 4), mode)
            XCTAssertEqual(truncate(store.path(for: stored.id), off_t(stored.storedSize / 2)), 0)
            XCTAssertThrowsError(try store.verify(stored.id, encoding: stored.encoding)) { error in
                guard case BlobError.corrupt(let id, _) = error else { return XCTFail("not corrupt: \(error)") }
                XCTAssertEqual(id, stored.id)
            }
        }
    }

    func testMissingBlobIsATypedErrorNamingIt() throws {
        let id = SHA256Hasher.hash(Array("never stored".utf8))
        XCTAssertThrowsError(try readAll(id, .identity)) { error in
            guard case BlobError.missing(let missing) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(missing, id)
            XCTAssertTrue("\(error)".contains(id.hex))
        }
        XCTAssertNoThrow(try store.remove([id]), "removing an absent blob is not an error")
    }

    func testExpectedAddressMismatchKeepsNothing() throws {
        let path = try folder.write("input", TestData.random(300_000, seed: 5))
        let wrong = SHA256Hasher.hash(Array("other".utf8))
        XCTAssertThrowsError(try FileDescriptor.with(path, O_RDONLY) {
            try store.write(from: $0, compression: .none, expected: wrong)
        }) { error in
            guard case BlobError.mismatch = error else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(try store.enumerate().count, 0)
        XCTAssertEqual(try store.interimFiles().count, 0)
    }

    /// The Core Data failure "clone external data reference … .interim doesn't exist": a reader racing
    /// a writer of the same content must see the installed blob or "missing", never a partial file.
    func testReaderRacingAWriterSeesWholeBlobOrNothing() async throws {
        let bytes = TestData.random(3_000_000, seed: 21)
        let id = SHA256Hasher.hash(bytes)
        let path = try folder.write("racing", bytes)
        let store = self.store!
        let deadline = Date().addingTimeInterval(3)
        enum Outcome: Sendable { case writer(rounds: Int), reader(good: Int, absent: Int) }
        let outcomes = try await withThrowingTaskGroup(of: Outcome.self) { group in
            group.addTask {
                var rounds = 0
                while Date() < deadline {
                    try store.remove([id])
                    _ = try FileDescriptor.with(path, O_RDONLY) { try store.write(from: $0, compression: .none) }
                    rounds += 1
                }
                return .writer(rounds: rounds)
            }
            group.addTask {
                var good = 0, absent = 0
                while Date() < deadline {
                    do {
                        var count = 0
                        try store.read(id, encoding: .identity) { count += $0.count }
                        XCTAssertEqual(count, bytes.count, "a reader saw a partial blob")
                        good += 1
                    } catch BlobError.missing {
                        absent += 1
                    }
                }
                return .reader(good: good, absent: absent)
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        var rounds = 0, reads = 0
        for outcome in outcomes {
            switch outcome {
            case .writer(let r): rounds = r
            case .reader(let g, _): reads = g
            }
        }
        XCTAssertGreaterThan(rounds, 10, "the writer must have replaced the blob many times")
        XCTAssertGreaterThan(reads, 0, "some reads must have found the installed blob")
        XCTAssertEqual(try store.interimFiles().filter { !$0.owned }.count, 0)
    }

    func testCopyOutIsAnIndependentVerifiedFile() throws {
        let bytes = TestData.random(1_500_000, seed: 31)
        let stored = try write(bytes, .none)
        let dest = folder.file("copy.bin")
        try store.copy(stored.id, encoding: .identity, to: dest)
        XCTAssertEqual(Array(try Data(contentsOf: URL(fileURLWithPath: dest))), bytes)
        // Editing the copy must not touch the store (no hard link).
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: dest))
        XCTAssertNoThrow(try store.verify(stored.id, encoding: .identity))
        let xz = try write(TestData.text(800_000), .xz)
        try store.copy(xz.id, encoding: .xz, to: folder.file("copy.txt"))
        XCTAssertEqual(Array(try Data(contentsOf: URL(fileURLWithPath: folder.file("copy.txt")))), TestData.text(800_000))
        XCTAssertThrowsError(try store.copy(xz.id, encoding: .xz, to: dest), "an existing destination is never overwritten")
    }

    func testEnumerateFlagsUnknownFiles() throws {
        let stored = try write(TestData.random(200_000, seed: 41), .none)
        try folder.write("blobs/zz/not-a-blob", "junk")
        try folder.write("blobs/ab/" + stored.id.hex, "misplaced")
        let files = try store.enumerate()
        XCTAssertEqual(files.filter { $0.id != nil }.map(\.id), [stored.id])
        XCTAssertEqual(files.filter { $0.id == nil }.count, stored.id.fanOut == "ab" ? 1 : 2)
    }

    /// Staging writes and verifying reads go through direct I/O in aligned blocks with the last
    /// partial block cached: every size around a block or chunk edge comes back byte for byte,
    /// through read, verify and copy-out, uncompressed and xz.
    func testBytesRoundTripAtEveryBlockAndChunkEdge() throws {
        let chunk = BlobStore.chunkSize
        for (n, size) in [0, 1, 4095, 4096, 4097, 8191, chunk - 1, chunk, chunk + 1, 2 * chunk + 4096, 3 * chunk - 7].enumerated() {
            let bytes = TestData.random(size, seed: 700 + UInt64(n))
            let path = try folder.write("input-\(n)", bytes)
            for mode in [CompressionMode.none, .xz] {
                let stored = try FileDescriptor.with(path, O_RDONLY) { try store.write(from: $0, compression: mode) }
                XCTAssertEqual(try store.storedSize(of: stored.id), stored.storedSize, "size \(size)")
                XCTAssertEqual(try readAll(stored.id, stored.encoding), bytes, "size \(size) \(mode)")
                XCTAssertEqual(try store.verify(stored.id, encoding: stored.encoding).size, Int64(size))
                let copy = folder.file("copy-\(n)-\(mode)")
                try store.copy(stored.id, encoding: stored.encoding, to: copy)
                XCTAssertEqual(try Array(Data(contentsOf: URL(fileURLWithPath: copy))), bytes, "copy of size \(size) \(mode)")
                try store.remove([stored.id])
            }
        }
        XCTAssertEqual(try store.interimFiles().count, 0)
    }

    func testStagingFileIsOwnedWhileHeldAndStaleAfter() throws {
        let path = try folder.write("input", TestData.random(200_000, seed: 51))
        let staged = try FileDescriptor.with(path, O_RDONLY) { try store.stage(from: $0, compression: .none) }
        XCTAssertEqual(try store.interimFiles().map(\.owned), [true])
        store.discard(staged)
        XCTAssertEqual(try store.interimFiles().count, 0)
        try folder.write("interim/left-by-a-crash.interim", "partial")
        XCTAssertEqual(try store.interimFiles().map(\.owned), [false])
    }

    /// Pieces of odd sizes and alignments (as a network delivers them) written through direct I/O
    /// come back byte for byte, and the staged file is renamed into place when kept uncompressed.
    func testIncomingBlobIsStagedPieceByPieceThenRenamedIntoPlaceOrCompressed() throws {
        let photo = [0xFF, 0xD8, 0xFF, 0xE0] + TestData.random(3_000_123, seed: 61)
        let incoming = try store.incoming()
        var offset = 0
        for size in [1, 4095, 4096, 65_537, 1 << 20, 3] + Array(repeating: 300_001, count: 20) where offset < photo.count {
            let end = min(photo.count, offset + size)
            try photo[offset..<end].withUnsafeBytes { try incoming.append($0) }
            offset = end
        }
        XCTAssertEqual(try store.interimFiles().map(\.owned), [true], "held while it is written")
        let staged = try incoming.finish(expected: SHA256Hasher.hash(photo))
        let kept = try store.encoded(staged, compression: .auto)
        XCTAssertEqual(kept.encoding, .identity)
        let stored = try store.install([kept])[0]
        XCTAssertEqual(stored.encoding, .identity)
        XCTAssertEqual(try readAll(stored.id, .identity), photo)
        XCTAssertEqual(try store.interimFiles().count, 0, "the staging file itself became the blob")

        let text = TestData.text(700_000, seed: 62)
        let second = try store.incoming()
        try text.withUnsafeBytes { try second.append($0) }
        let packed = try store.install([store.encoded(second.finish(expected: SHA256Hasher.hash(text)), compression: .auto)])[0]
        XCTAssertEqual(packed.encoding, .xz, "auto still compresses what pays")
        XCTAssertEqual(try readAll(packed.id, .xz), text)
        XCTAssertEqual(try store.interimFiles().count, 0)
    }

    func testIncomingBlobThatDoesNotHashToItsAddressLeavesNothing() throws {
        let bytes = TestData.random(250_000, seed: 63)
        let incoming = try store.incoming()
        try bytes.withUnsafeBytes { try incoming.append($0) }
        let wrong = SHA256Hasher.hash(Array("something else".utf8))
        XCTAssertThrowsError(try incoming.finish(expected: wrong)) { error in
            guard case BlobError.mismatch(let expected, let actual) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(expected, wrong)
            XCTAssertEqual(actual, SHA256Hasher.hash(bytes))
        }
        XCTAssertEqual(try store.interimFiles().count, 0)
        XCTAssertFalse(store.contains(SHA256Hasher.hash(bytes)))

        let abandoned = try store.incoming()
        try bytes.withUnsafeBytes { try abandoned.append($0) }
        abandoned.discard()
        XCTAssertEqual(try store.interimFiles().count, 0, "a cut-off download leaves no staging file")
    }
}
