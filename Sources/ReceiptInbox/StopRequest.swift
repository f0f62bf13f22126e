import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// SIGINT and SIGTERM as a request to stop after the file in flight. The signals are received by
/// Dispatch signal sources (as swift-service-lifecycle's UnixSignals does), so no code of ours runs
/// in a signal handler: the source's handler, on a Dispatch queue, sets the flag and wakes the
/// waiting loop through a pipe.
public final class StopRequest {
    /// Held by the signal sources' handlers as well (not `self`, which they would keep alive).
    private final class Flag: Sendable {
        let requested = Mutex(false)
    }

    private let flag = Flag()
    private let readFD: Int32
    private let writeFD: Int32
    private let sources: [DispatchSourceSignal]

    public init(signals: [Int32] = [SIGINT, SIGTERM]) {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) != 0 { fds = [-1, -1] }
        for fd in fds where fd >= 0 {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        readFD = fds[0]
        writeFD = fds[1]
        sources = signals.map { number in
            #if canImport(Darwin)
            // kqueue's EVFILT_SIGNAL ranks below the signal's own disposition; on Linux Dispatch
            // takes the signal over itself.
            signal(number, SIG_IGN)
            #endif
            return DispatchSource.makeSignalSource(signal: number, queue: .global())
        }
        for source in sources {
            source.setEventHandler { [flag, writeFD] in
                flag.requested.withLock { $0 = true }
                var byte: UInt8 = 1
                _ = write(writeFD, &byte, 1)
            }
            source.resume()
        }
    }

    deinit {
        for source in sources { source.cancel() }
        if readFD >= 0 { close(readFD); close(writeFD) }
    }

    public var isRequested: Bool { flag.requested.withLock { $0 } }

    /// Readable once a stop was requested: for poll(2) beside other descriptors.
    var wakeFD: Int32 { readFD }
}
