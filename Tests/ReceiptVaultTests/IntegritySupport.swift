import BlobStore
import Foundation
import ReceiptCatalog
import ReceiptVault
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Helpers for the gc, fsck, crash and fault tests: real vaults, real files, the real binary.
enum Integrity {
    /// The built `receipt` binary; fails the test when it was not built (`swift build --product receipt`).
    static func binary(file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let path = ReceiptBinary.path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            XCTFail("the receipt binary is not built: run `swift build --product receipt` first", file: file, line: line)
            throw CocoaError(.fileNoSuchFile)
        }
        return path
    }

    /// Runs the binary and SIGKILLs it the first time `reached` holds: whether it was killed before it ended.
    static func kill(_ arguments: [String], when reached: () -> Bool) throws -> Bool {
        let process = try start(arguments)
        var killed = false
        while process.isRunning {
            if reached() {
                Glibc.kill(process.processIdentifier, SIGKILL)
                killed = true
                break
            }
            usleep(100)  // polling a condition, not a delay: the kill waits for the moment
        }
        process.waitUntilExit()
        return killed && process.terminationReason == .uncaughtSignal
    }

    /// Runs `receipt --vault VAULT stats`, which migrates an older catalog first, and SIGKILLs it once
    /// the catalog's log holds `logSize` bytes: whether it was killed before it ended.
    static func killWhenTheLogReaches(_ logSize: Int64, vault: String) throws -> Bool {
        let wal = FileSystem.join(vault, Catalog.fileName) + "-wal"
        return try kill(["--vault", vault, "stats"]) { ((try? FileSystem.status(wal))?.size ?? 0) >= logSize }
    }

    /// Starts the binary with output to files (or discarded); the caller waits or kills.
    static func start(_ arguments: [String], stdout: String? = nil, stderr: String? = nil) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try binary())
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try stdout.map(handle) ?? FileHandle.nullDevice
        process.standardError = try stderr.map(handle) ?? FileHandle.nullDevice
        try process.run()
        return process
    }

    static func handle(_ path: String) throws -> FileHandle {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        return try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    }

    /// Runs a bash script (loops of the binary) to completion.
    static func bash(_ script: String, environment: [String: String] = [:]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", script]
        var env = ProcessInfo.processInfo.environment
        env["RECEIPT"] = try binary()
        for (k, v) in environment { env[k] = v }
        process.environment = env
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// Waits up to `seconds` for the process to end; true when it did.
    static func wait(_ process: Process, seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        return !process.isRunning
    }

    /// Sets a file's modification time `secondsAgo` into the past (as an old blob would have).
    static func age(_ path: String, secondsAgo: Int) {
        var times = [timespec(), timespec()]
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        times[0].tv_sec = now.tv_sec - secondsAgo
        times[1].tv_sec = now.tv_sec - secondsAgo
        _ = utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW)
    }

    static func mtime(_ path: String) -> Int64 {
        (try? FileSystem.status(path))?.mtimeNanoseconds ?? 0
    }

    /// A vault with `count` external (random, 150 KiB) blobs imported; returns the vault and the files.
    static func vault(in dir: TemporaryFolder, external count: Int, inline: Int = 0, seed: UInt64 = 1,
                      threshold: Int64 = VaultSettings.defaultInlineThreshold) throws -> (Vault, ImportReport) {
        let (vault, _) = try Vault.create(at: dir.file("vault"), inlineThreshold: threshold, compression: .auto)
        var paths: [String] = []
        for i in 0..<count { paths.append(try dir.write("in/ext\(i).bin", TestData.random(150 * 1024 + i, seed: seed &+ UInt64(i)))) }
        for i in 0..<inline { paths.append(try dir.write("in/small\(i).txt", TestData.text(3000 + i, seed: Int(seed) + i))) }
        let report = try vault.importFiles(paths)
        return (vault, report)
    }

    /// Runs fsck in-process.
    static func fsck(_ path: String, quick: Bool = false, repair: Bool = false) async throws -> FsckReport {
        try await Vault.fsck(at: path, options: FsckOptions(quick: quick, repair: repair))
    }

    /// Problems of the given kinds.
    static func problems(_ report: FsckReport, _ kinds: FsckProblemKind...) -> [FsckProblem] {
        report.problems.filter { kinds.contains($0.kind) }
    }

    /// Every file under `root` with its size and SHA-256 (to prove a command changed nothing).
    static func snapshot(_ root: String) -> [String: String] {
        var out: [String: String] = [:]
        let enumerator = FileManager.default.enumerator(atPath: root)
        while let rel = enumerator?.nextObject() as? String {
            let path = root + "/" + rel
            guard let st = try? FileSystem.status(path), st.isRegular else { continue }
            let hash = (try? SHA256Hasher.hash(fileAt: path).0.hex) ?? "unreadable"
            out[rel] = "\(st.size) \(hash) \(st.mtimeNanoseconds)"
        }
        return out
    }

    /// Blob file path for a hex address inside a vault.
    static func blobPath(_ vault: String, _ hex: String) -> String {
        vault + "/blobs/" + hex.prefix(2) + "/" + hex
    }
}
