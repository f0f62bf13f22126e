import Foundation

/// How long and how much memory one extractor process may take.
public struct ToolLimits: Sendable, Equatable {
    /// Wall-clock seconds before the tool is sent SIGTERM (SIGKILL 2 s later).
    public var seconds: Int
    /// Address-space limit (RLIMIT_AS) in bytes.
    public var memoryBytes: Int64

    public init(seconds: Int = 120, memoryBytes: Int64 = 2 << 30) {
        self.seconds = seconds
        self.memoryBytes = memoryBytes
    }
}

/// What became of one run of an extractor tool.
public enum ToolOutcome: Sendable, Equatable {
    case exited(status: Int32, stderrTail: String)
    case timedOut(seconds: Int)
    case crashed(signal: Int32, stderrTail: String)
    /// The tool could not be started at all (not found, not executable).
    case notStarted(String)

    public var succeeded: Bool {
        if case .exited(0, _) = self { return true }
        return false
    }

    /// One phrase for a failure: "timed out after 120 s", "crashed (signal 11)", "exited with status 1: …".
    public var reason: String {
        switch self {
        case .exited(let status, let tail): return "exited with status \(status)" + (tail.isEmpty ? "" : ": \(tail)")
        case .timedOut(let seconds): return "timed out after \(seconds) s"
        case .crashed(let signal, let tail): return "crashed (signal \(signal))" + (tail.isEmpty ? "" : ": \(tail)")
        case .notStarted(let why): return "could not be started: \(why)"
        }
    }
}

/// Runs an extractor as a child process under a time limit (coreutils `timeout`) and a memory limit
/// (util-linux `prlimit --as`), with OpenMP held to one thread (`OMP_THREAD_LIMIT=1`: the caller runs
/// one extractor per core). Both wrappers come from Debian's Essential packages. stdout and stderr
/// go to files, never to pipes: a chatty tool cannot fill a pipe and stall, and a hung one holds
/// nothing of ours.
public enum ToolRun {
    static let timeoutPath = "/usr/bin/timeout"
    static let prlimitPath = "/usr/bin/prlimit"

    /// Runs `executable args` in `directory`; its stdout goes to `stdoutPath` (or /dev/null).
    public static func run(_ executable: String, _ args: [String], in directory: String, stdoutPath: String? = nil,
                           limits: ToolLimits, environment: [String: String] = [:]) -> ToolOutcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: timeoutPath)
        process.arguments = ["--kill-after=2", String(limits.seconds),
                             prlimitPath, "--as=\(limits.memoryBytes)", "--core=0", "--", executable] + args
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        var env = environment
        env["PATH"] = env["PATH"] ?? "/usr/bin:/bin"
        env["OMP_THREAD_LIMIT"] = "1"
        env["LC_ALL"] = "C.UTF-8"
        process.environment = env
        let errPath = directory + "/.stderr"
        guard FileManager.default.createFile(atPath: errPath, contents: nil),
              let errHandle = FileHandle(forWritingAtPath: errPath) else {
            return .notStarted("cannot create \(errPath)")
        }
        defer { try? errHandle.close() }
        var outHandle: FileHandle?
        if let stdoutPath {
            guard FileManager.default.createFile(atPath: stdoutPath, contents: nil),
                  let handle = FileHandle(forWritingAtPath: stdoutPath) else {
                return .notStarted("cannot create \(stdoutPath)")
            }
            outHandle = handle
        }
        defer { try? outHandle?.close() }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = outHandle ?? FileHandle.nullDevice
        process.standardError = errHandle
        do { try process.run() } catch { return .notStarted("\(error)") }
        process.waitUntilExit()
        let tail = lastLine(of: errPath)
        let status = process.terminationStatus
        if process.terminationReason == .uncaughtSignal {
            // `timeout` re-raises on itself the signal that killed the tool.
            return .crashed(signal: status, stderrTail: tail)
        }
        switch status {
        case 124, 137: return .timedOut(seconds: limits.seconds)
        case 126, 127: return .notStarted(tail.isEmpty ? "\(executable) cannot be run" : tail)
        case 128...160: return .crashed(signal: status - 128, stderrTail: tail)
        default: return .exited(status: status, stderrTail: tail)
        }
    }

    /// The last non-empty line of a tool's stderr, at most 200 characters (the reason recorded).
    static func lastLine(of path: String) -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else { return "" }
        defer { try? handle.close() }
        let size = (try? handle.seekToEnd()) ?? 0
        try? handle.seek(toOffset: size > 4096 ? size - 4096 : 0)
        let data = (try? handle.readToEnd()) ?? Data()
        let lines = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline)
        let last = lines.last(where: { !$0.trimmingCharacters(in: .whitespaces).isEmpty }) ?? ""
        return String(last.prefix(200))
    }

    /// The full path of `name` on $PATH (or `name` itself when it holds a slash and is executable).
    public static func locate(_ name: String, path: String?) -> String? {
        if name.contains("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
        for dir in (path ?? "/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
