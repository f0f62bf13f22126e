import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL cluster (Debian's postgresql: initdb and pg_ctl) in a temporary folder,
/// listening on a free port of 127.0.0.1 and a Unix socket in that folder, run by an unprivileged
/// user when the tests run as root (initdb and postgres refuse root). One cluster per test process,
/// started on first use; each test gets a database of its own. Stopped (`pg_ctl stop -m immediate`)
/// when the process exits, and by a watchdog if the process dies without exiting cleanly.
/// A cluster that cannot start is an error: the tests that need it fail, they never skip.
public final class PostgresCluster: @unchecked Sendable {
    public let folder: String
    public let port: Int
    public let user = "receipt"
    let bin: String
    let runAs: String?
    private static let lock = NSLock()
    nonisolated(unsafe) private static var started: Result<PostgresCluster, Error>?
    nonisolated(unsafe) private static var databases = 0

    /// The cluster of this test process.
    public static func shared() throws -> PostgresCluster {
        lock.lock()
        defer { lock.unlock() }
        if started == nil {
            started = Result { try PostgresCluster() }
            if case .success = started { atexit { PostgresCluster.stopShared() } }
        }
        return try started!.get()
    }

    static func stopShared() {
        if case .success(let cluster)? = started { cluster.stop() }
    }

    /// A new empty database and its `postgres://` URL (over TCP on 127.0.0.1).
    public func createDatabase() throws -> String {
        let name: String = Self.lock.withLock {
            Self.databases += 1
            return "receipt_\(getpid())_\(Self.databases)"
        }
        try run("createdb", ["-h", "127.0.0.1", "-p", "\(port)", "-U", user, name])
        return "postgres://\(user)@127.0.0.1:\(port)/\(name)"
    }

    /// Runs `psql -c SQL` on the database of `url` and returns its unaligned output.
    @discardableResult
    public func psql(_ url: String, _ sql: String) throws -> String {
        try run("psql", ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql])
    }

    private init() throws {
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? [])
            .compactMap(Int.init).sorted()
        guard let version = versions.last else {
            throw ClusterError("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin): install Debian's postgresql (tools/install-deps)")
        }
        bin = "/usr/lib/postgresql/\(version)/bin"
        runAs = getuid() == 0 ? "nobody" : nil
        var template = Array((NSTemporaryDirectory() + "/receipt-pg-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw ClusterError("cannot create a temporary folder for PostgreSQL")
        }
        folder = String(cString: made)
        chmod(folder, 0o755)
        if runAs != nil { try Self.exec("/bin/chown", ["nobody:nogroup", folder]) }
        var lastError: Error = ClusterError("PostgreSQL did not start")
        var chosen: Int?
        do {
            try Self.exec(bin + "/initdb", ["-D", folder + "/data", "-U", user, "--auth=trust", "-E", "UTF8",
                                            "--no-sync", "--locale=C"], as: runAs)
            for _ in 0..<3 {
                let port = try Self.freePort()
                do {
                    try Self.exec(bin + "/pg_ctl", ["-D", folder + "/data", "-l", folder + "/log", "-w", "-t", "120", "-o",
                                                    "-p \(port) -k \(folder) -c listen_addresses=127.0.0.1 -c max_connections=200",
                                                    "start"], as: runAs)
                    chosen = port
                    break
                } catch {
                    lastError = error
                }
            }
        } catch {
            lastError = error
        }
        guard let chosen else {
            let log = (try? String(contentsOfFile: folder + "/log", encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(atPath: folder)
            throw ClusterError("the test PostgreSQL cluster did not start: \(lastError) \(log.suffix(600))")
        }
        port = chosen
        startWatchdog()
    }

    /// Stops the cluster when this process is gone, however it ended.
    private func startWatchdog() {
        let pgctl = (runAs.map { "/usr/sbin/runuser -u \($0) -- " } ?? "") + bin + "/pg_ctl"
        let script = "while [ -d /proc/\(getpid()) ]; do sleep 1; done; \(pgctl) -D \(folder)/data -m immediate stop >/dev/null 2>&1; rm -rf \(folder)"
        let process = Process()
        // In a session of its own, so it outlives a test process killed with its process group.
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setsid")
        process.arguments = ["/bin/sh", "-c", script]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try? process.run()
    }

    public func stop() {
        _ = try? Self.exec(bin + "/pg_ctl", ["-D", folder + "/data", "-m", "immediate", "stop"], as: runAs)
        try? FileManager.default.removeItem(atPath: folder)
    }

    @discardableResult
    private func run(_ tool: String, _ arguments: [String]) throws -> String {
        try Self.exec(bin + "/" + tool, arguments, as: runAs)
    }

    /// Runs a program (as `user` through runuser when given) and returns its output; throws with its
    /// output when it fails. Spawned with every descriptor above stderr closed and waited for with
    /// waitpid, not through Foundation's Process: the postmaster pg_ctl leaves running would inherit
    /// the descriptor Process watches for its child's exit, and Process would wait for the cluster to stop.
    @discardableResult
    static func exec(_ program: String, _ arguments: [String], as user: String? = nil) throws -> String {
        // bash closes every descriptor above stderr (dash cannot name those past 9), then runs the program.
        let closeAndRun = "for fd in $(ls /proc/$$/fd); do [ \"$fd\" -gt 2 ] && eval \"exec $fd>&-\"; done 2>/dev/null; exec \"$@\""
        let argv = ["/bin/bash", "-c", closeAndRun, "bash"]
            + (user.map { ["/usr/sbin/runuser", "-u", $0, "--", program] } ?? [program]) + arguments
        let outputPath = NSTemporaryDirectory() + "/receipt-pg-output-\(UUID().uuidString)"
        defer { unlink(outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for p in cArgs { free(p) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, &cArgs, environ)
        guard spawned == 0 else { throw ClusterError("cannot run \(argv[0]): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        guard status == 0 else {
            throw ClusterError("\(program) \(arguments.joined(separator: " ")) failed (wait status \(status)): \(text)")
        }
        return text
    }

    /// A port of 127.0.0.1 nobody listens on at the moment (asked of the kernel).
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ClusterError("socket() failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw ClusterError("cannot find a free port on 127.0.0.1") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

public struct ClusterError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
