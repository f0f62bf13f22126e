@testable import BlobStore
import Foundation
import TestSupport
import XCTest

/// The thread that writes a large staging file's chunks while the next is hashed (`WriterThread`).
final class WriterThreadTests: XCTestCase {
    struct DiskFull: Error {}

    /// A sink that records the first byte of each piece it is given, on the writer's thread, and fails
    /// on the piece whose first byte is `failOn`.
    final class Recorder: @unchecked Sendable {
        var seen: [UInt8] = []
        var threads = Set<String>()
        let failOn: UInt8?
        init(failOn: UInt8? = nil) { self.failOn = failOn }
        func write(_ piece: UnsafeRawBufferPointer) throws {
            threads.insert("\(pthread_self())")
            if piece.first == failOn { throw DiskFull() }
            seen.append(piece.first ?? 0)
        }
    }

    func testPiecesAreWrittenInOrderOnAnotherThread() throws {
        let recorder = Recorder()
        let thread = try WriterThread(recorder.write)
        let pieces: [[UInt8]] = (1...5).map { [UInt8($0), 0, 0] }
        for piece in pieces {
            try piece.withUnsafeBytes {
                thread.start($0)
                try thread.wait()  // while the piece's memory is lent
            }
        }
        thread.stop()
        XCTAssertEqual(recorder.seen, [1, 2, 3, 4, 5])
        XCTAssertEqual(recorder.threads.count, 1)
        XCTAssertFalse(recorder.threads.contains("\(pthread_self())"), "written on a thread of its own")
    }

    func testAFailedWriteIsThrownAndNothingAfterItIsWritten() throws {
        let recorder = Recorder(failOn: 2)
        let thread = try WriterThread(recorder.write)
        defer { thread.stop() }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1, alignment: 1)
        defer { buffer.deallocate() }
        buffer[0] = 1
        thread.start(UnsafeRawBufferPointer(buffer))
        XCTAssertNoThrow(try thread.wait())
        buffer[0] = 2
        thread.start(UnsafeRawBufferPointer(buffer))
        XCTAssertThrowsError(try thread.wait()) { XCTAssertTrue($0 is DiskFull) }
        buffer[0] = 3
        thread.start(UnsafeRawBufferPointer(buffer))
        XCTAssertThrowsError(try thread.wait(), "the first error stays")
        XCTAssertEqual(recorder.seen, [1])
    }

    /// A large file staged through the thread is the file, byte for byte, under its hash.
    func testALargeFileStagedWhileHashedIsTheFile() throws {
        let folder = TemporaryFolder()
        let store = BlobStore(root: folder.path)
        try store.prepare()
        let bytes = TestData.random(Int(BlobStore.overlappedSize) * 2 + 12_345, seed: 77)
        let path = try folder.write("big.bin", bytes)
        let staged = try FileDescriptor.with(path, O_RDONLY) { try store.stage(from: $0, compression: .none) }
        XCTAssertEqual(staged.id, SHA256Hasher.hash(bytes))
        XCTAssertEqual(staged.size, Int64(bytes.count))
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: staged.path)), Data(bytes))
        store.discard(staged)
    }
}
