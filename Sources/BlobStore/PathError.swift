#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An operating-system error with the path and the operation it happened in, so a message can say
/// "No space left on device while writing interim/…" rather than "error 28" (Go's `os.PathError`;
/// named so it never meets NIO's `IOError` in a file that imports both).
public struct PathError: Error, CustomStringConvertible, Sendable, Equatable {
    public let operation: String
    public let path: String
    public let errno: Int32

    public init(_ operation: String, path: String, errno: Int32) {
        self.operation = operation
        self.path = path
        self.errno = errno
    }

    public var message: String { String(cString: strerror(errno)) }
    public var description: String { "\(message) while \(operation) \(path)" }

    /// True when the error says the path (or a folder on it) does not exist.
    public var isNotFound: Bool { errno == ENOENT || errno == ENOTDIR }
}

/// Runs a system call that returns -1 and sets errno on failure, retrying on EINTR.
@discardableResult
func sys<T: BinaryInteger>(_ operation: String, _ path: String, _ call: () -> T) throws -> T {
    while true {
        let result = call()
        if result != -1 { return result }
        let code = Glibc.errno
        if code == EINTR { continue }
        throw PathError(operation, path: path, errno: code)
    }
}
