#if canImport(Glibc)
import Glibc
#endif
import Dispatch

/// Writes, on a thread of its own, the pieces a caller hands it one at a time, while the caller goes on
/// (hashing and reading the next piece). A large file's hash and its direct write to the disk take
/// about as long each (1 GiB on this project's machine: 0.64 s and 0.66 s); one after the other they
/// made its import 2.1× `openssl sha256` of it. A thread of its own, not Dispatch's: the import runs on
/// a pool thread of its own already, where a nested `concurrentPerform` ran both parts in turn.
///
/// The pieces are written in the order handed over, each once the one before is written. A piece's
/// memory must stay untouched until `wait()` returns after it.
final class WriterThread: @unchecked Sendable {
    private let write: (UnsafeRawBufferPointer) throws -> Void
    private let handed = DispatchSemaphore(value: 0)
    private let written = DispatchSemaphore(value: 0)
    /// Set by the caller before `handed` is signalled, read by the thread after it waited: the
    /// semaphores order every access. nil with `handed` signalled: the thread ends.
    private var piece: UnsafeRawBufferPointer?
    private var failure: (any Error)?
    private var inFlight = false
    private var thread = pthread_t()
    private var running = false

    /// Starts the thread; `write` runs on it only.
    init(_ write: @escaping (UnsafeRawBufferPointer) throws -> Void) throws {
        self.write = write
        let context = Unmanaged.passRetained(self).toOpaque()
        let code = pthread_create(&thread, nil, { context in
            Unmanaged<WriterThread>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        guard code == 0 else {
            Unmanaged<WriterThread>.fromOpaque(context).release()
            throw PathError("starting a writer thread for", path: "a staging file", errno: code)
        }
        running = true
    }

    private func run() {
        while true {
            handed.wait()
            guard let piece else { return }
            if failure == nil {
                do { try write(piece) } catch { failure = error }
            }
            written.signal()
        }
    }

    /// Hands `piece` over to be written after the one before (call `wait()` between two hand-overs).
    func start(_ piece: UnsafeRawBufferPointer) {
        precondition(!inFlight, "a piece handed over before the one before was waited for")
        self.piece = piece
        inFlight = true
        handed.signal()
    }

    /// Waits until the piece handed over last is written; throws the first write's error.
    func wait() throws {
        if inFlight {
            written.wait()
            inFlight = false
        }
        if let failure { throw failure }
    }

    /// Waits for the piece in flight, if any, and ends the thread. Call it on every path (a `defer`):
    /// the caller's buffers may be freed only after it.
    func stop() {
        try? wait()
        guard running else { return }
        running = false
        piece = nil
        handed.signal()
        pthread_join(thread, nil)
    }
}
