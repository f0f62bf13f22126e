import BlobStore
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// A fresh temporary folder per test, removed afterwards.
public final class TemporaryFolder {
    public let path: String

    public init(_ label: String = "receipt-test") {
        let template = NSTemporaryDirectory() + "/\(label)-XXXXXX"
        var bytes = Array(template.utf8CString)
        let made = bytes.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        path = made.map { String(cString: $0) } ?? (NSTemporaryDirectory() + "/\(label)-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    public func url(_ name: String) -> URL { URL(fileURLWithPath: path).appendingPathComponent(name) }
    public func file(_ name: String) -> String { path + "/" + name }

    /// Writes `bytes` to `name` (creating folders) and returns its path.
    @discardableResult
    public func write(_ name: String, _ bytes: [UInt8]) throws -> String {
        let p = file(name)
        try FileManager.default.createDirectory(atPath: FileSystem.parentPath(p), withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: p))
        return p
    }

    @discardableResult
    public func write(_ name: String, _ text: String) throws -> String { try write(name, Array(text.utf8)) }
}

/// Deterministic test content.
public enum TestData {
    /// Pseudo-random (incompressible) bytes from a seed.
    public static func random(_ count: Int, seed: UInt64) -> [UInt8] {
        var state = seed &+ 0x9E37_79B9_7F4A_7C15
        var out = [UInt8](repeating: 0, count: count)
        var i = 0
        while i < count {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            withUnsafeBytes(of: state) { word in
                for b in word where i < count { out[i] = b; i += 1 }
            }
        }
        return out
    }

    /// Compressible text-like bytes.
    public static func text(_ count: Int, seed: Int = 0) -> [UInt8] {
        let line = Array("Receipt line \(seed): 2 x Coffee beans 12.34 EUR, VAT 19 %, thank you for shopping\n".utf8)
        return (0..<count).map { line[$0 % line.count] }
    }

    public static func sha256(_ bytes: [UInt8]) -> String { SHA256Hasher.hash(bytes).hex }
}

/// The built `receipt` executable, for tests that drive the real binary (kill tests, exit codes).
public enum ReceiptBinary {
    /// The first of: `RECEIPT_BINARY` (tools/sanitize sets it to the instrumented binary), the folder
    /// of the running test executable and its parents (the `receipt` built with it, in whatever scratch
    /// path: .build, .build-asan, ...), then ./.build/{debug,release}/receipt.
    public static var path: String {
        if let given = ProcessInfo.processInfo.environment["RECEIPT_BINARY"], !given.isEmpty {
            return given
        }
        // On Linux the tests are an executable, .build/<triple>/<config>/receiptPackageTests.xctest,
        // and Bundle.main.bundlePath is the folder holding it, so that folder is looked in first.
        var folders: [URL] = []
        if let executable = Bundle.main.executableURL { folders.append(executable.deletingLastPathComponent()) }
        let bundle = URL(fileURLWithPath: Bundle.main.bundlePath)
        folders += [bundle, bundle.deletingLastPathComponent()]
        var dir = bundle.deletingLastPathComponent()
        for _ in 0..<2 {
            dir = dir.deletingLastPathComponent()
            folders.append(dir)
        }
        for folder in folders {
            let candidate = folder.appendingPathComponent("receipt").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        for config in ["debug", "release"] {
            let candidate = FileManager.default.currentDirectoryPath + "/.build/\(config)/receipt"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return "receipt"
    }

    public struct Result {
        public let status: Int32
        public let stdout: String
        public let stderr: String
        public let stdoutData: Data
    }

    /// Runs the binary (or `executable`, e.g. a wrapper such as script(1)) to completion with
    /// `arguments` and extra environment.
    @discardableResult
    public static func run(_ arguments: [String], environment: [String: String] = [:],
                           currentDirectory: String? = nil, executable: String? = nil) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable ?? path)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        process.environment = env
        if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
        // Output goes to files, not pipes: a large output can then never block the child.
        let out = NSTemporaryDirectory() + "/receipt-out-" + UUID().uuidString
        let err = out + ".err"
        defer { try? FileManager.default.removeItem(atPath: out); try? FileManager.default.removeItem(atPath: err) }
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        _ = FileManager.default.createFile(atPath: err, contents: nil)
        let outHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        let errHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        defer { try? outHandle.close(); try? errHandle.close() }
        process.standardOutput = outHandle
        process.standardError = errHandle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        let outData = try Data(contentsOf: URL(fileURLWithPath: out))
        let errData = try Data(contentsOf: URL(fileURLWithPath: err))
        return Result(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                      stderr: String(decoding: errData, as: UTF8.self), stdoutData: outData)
    }
}
