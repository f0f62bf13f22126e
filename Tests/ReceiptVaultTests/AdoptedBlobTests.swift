import BlobStore
import Foundation
@testable import ReceiptVault
import TestSupport
import XCTest

/// A blob file a killed sync installed but did not get to reference is hashed once when it is
/// adopted: by the check that finds it adoptable, whose `VerifiedBlob` the ingest then takes.
final class AdoptedBlobTests: XCTestCase {
    /// Bytes this process has read through read(2) and its kin so far (/proc/self/io's `rchar`):
    /// what hashing a blob's file costs, counted by the kernel.
    static func bytesRead() throws -> Int64 {
        let io = try String(contentsOfFile: "/proc/self/io", encoding: .utf8)
        let line = try XCTUnwrap(io.split(separator: "\n").first { $0.hasPrefix("rchar:") })
        return try XCTUnwrap(Int64(line.dropFirst("rchar:".count).trimmingCharacters(in: .whitespaces)))
    }

    func testAnAdoptedFileIsHashedOnlyByItsCheck() throws {
        let folder = TemporaryFolder("receipt-adopt")
        let vault = try Vault.create(at: folder.file("vault"), inlineThreshold: 1024).vault
        defer { try? vault.close() }
        // A file installed under its address with no row, as a sync killed before its commit leaves it.
        let size = 8 << 20
        let staged = try vault.blobs.stage(bytes: TestData.random(size, seed: 7), compression: .none)
        let id = staged.id
        _ = try vault.blobs.install([staged])

        let start = try Self.bytesRead()
        let verified = try XCTUnwrap(vault.adoptableBlobFile(id), "the file verifies and is adoptable")
        let checked = try Self.bytesRead()
        XCTAssertGreaterThanOrEqual(checked - start, Int64(size), "the check reads the whole file")
        let ingested = try vault.ingestOnce([.adopted(verified)]) { _, blobs in blobs }
        let adopting = try Self.bytesRead() - checked
        XCTAssertEqual(ingested.map(\.id), [id])
        XCTAssertEqual(ingested.first?.size, Int64(size))
        // The ingest sniffs the first bytes for the media type and reads the catalog: not the file again.
        XCTAssertLessThan(adopting, Int64(size / 4), "the ingest read the adopted file again (\(adopting) bytes)")
        XCTAssertEqual(try vault.blobRecord(id.hex).size, Int64(size))
    }
}
