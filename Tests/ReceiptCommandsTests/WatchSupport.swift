import BlobStore
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// A `receipt` process left running (for `watch` without `--once`), its output going to files.
final class RunningReceipt {
    let process = Process()
    private let out: String
    private let err: String

    init(_ arguments: [String], currentDirectory: String) throws {
        out = NSTemporaryDirectory() + "/receipt-watch-" + UUID().uuidString
        err = out + ".err"
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        _ = FileManager.default.createFile(atPath: err, contents: nil)
        process.executableURL = URL(fileURLWithPath: ReceiptBinary.path)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
        try? FileManager.default.removeItem(atPath: out)
        try? FileManager.default.removeItem(atPath: err)
    }

    var stdout: String { (try? String(contentsOfFile: out, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOfFile: err, encoding: .utf8)) ?? "" }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// Waits for the process to end (at most `seconds`) and returns its exit status; nil if it did not.
    func exitStatus(within seconds: Double = 60) -> Int32? {
        guard waitUntil(seconds, { !self.process.isRunning }) else { return nil }
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// Polls `condition` every few milliseconds until it holds or `seconds` pass; returns whether it held.
@discardableResult
func waitUntil(_ seconds: Double = 60, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        usleep(5_000)
    }
    return try condition()
}

/// Holds a vault's lock exclusively, as gc does: an import waits for it (and says so on stderr)
/// before it commits anything, which holds `watch` still with a file in flight.
final class HeldVaultLock {
    private let fd: Int32

    init(vault: String) throws {
        fd = open(vault + "/lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0, flock(fd, LOCK_EX) == 0 else { throw CocoaError(.fileLocking) }
    }

    func release() { close(fd) }
}

extension CLITestCase {
    var inbox: String { folder.file("inbox") }

    /// Relative paths of the regular files under `path` (hidden folders included), sorted.
    func files(under path: String) -> [String] {
        let all = FileManager.default.enumerator(atPath: path)?.allObjects as? [String] ?? []
        return all.filter {
            var isFolder: ObjCBool = false
            return FileManager.default.fileExists(atPath: path + "/" + $0, isDirectory: &isFolder) && !isFolder.boolValue
        }.sorted()
    }

    /// Files in `.imported/`, as `MONTH/NAME`.
    var importedFiles: [String] { files(under: inbox + "/.imported") }

    /// The SHA-256 of every attachment of every receipt, once per receipt holding it.
    func receiptHashes() throws -> [String] {
        try list().flatMap { ($0["attachments"] as? [[String: Any]] ?? []).compactMap { $0["sha256"] as? String } }
    }

    func startWatch(_ extra: String...) throws -> RunningReceipt {
        try RunningReceipt(["--vault", vault, "watch", inbox] + extra, currentDirectory: folder.path)
    }

    /// `YYYY-MM` of now, local time, as `.imported/` names it.
    static func month(_ date: Date = Date()) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM"
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone.current
        return formatter.string(from: date)
    }
}
