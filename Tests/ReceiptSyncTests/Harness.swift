import AsyncHTTPClient
import BlobStore
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ReceiptServer
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// A real sync server on 127.0.0.1 with an ephemeral port, run in the test process.
final class TestServer: @unchecked Sendable {
    let data: String
    let port: Int
    let tls: TLSIdentity?
    private let task: Task<Void, Error>

    var url: String { "\(tls == nil ? "http" : "https")://127.0.0.1:\(port)" }

    private init(data: String, port: Int, tls: TLSIdentity?, task: Task<Void, Error>) {
        self.data = data
        self.port = port
        self.tls = tls
        self.task = task
    }

    static func start(data: String, limits: ServerLimits = ServerLimits(), tls: TLSIdentity? = nil) async throws -> TestServer {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        var logger = Logger(label: "test-server")
        logger.logLevel = .critical
        let task = Task {
            defer { continuation.finish() }
            try await SyncServer.run(dataPath: data, database: try ServerDatabase(Household.database), host: "127.0.0.1", port: 0,
                                     limits: limits, tls: tls, shutdownSignals: [],
                                     logger: logger) { port in continuation.yield(port) }
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            _ = try await task.value
            throw HarnessError("the test server stopped before it listened")
        }
        return TestServer(data: data, port: port, tls: tls, task: task)
    }

    func stop() async {
        task.cancel()
        _ = try? await task.value
    }

    /// Creates an account on the data folder and returns its token.
    static func addAccount(_ name: String, data: String) async throws -> String {
        let catalog = try await ServerDatabase(Household.database).open(dataPath: data)
        do {
            let token = try await catalog.addAccount(name, quota: nil)
            try await catalog.close()
            return token
        } catch {
            try? await catalog.close()
            throw error
        }
    }
}

/// Raw HTTP against the server.
struct Raw {
    let base: String

    struct Answer {
        let status: Int
        let body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    func call(_ method: HTTPMethod, _ path: String, token: String?, body: [UInt8]? = nil,
              json: Bool = true) async throws -> Answer {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let body {
            if json { request.headers.add(name: "Content-Type", value: "application/json") }
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let collected = try await response.body.collect(upTo: 64 << 20)
        return Answer(status: Int(response.status.code), body: Array(collected.readableBytesView))
    }

    func json<T: Encodable>(_ method: HTTPMethod, _ path: String, token: String?, _ value: T) async throws -> Answer {
        try await call(method, path, token: token, body: Array(try JSONEncoder().encode(value)))
    }
}

/// The built `receipt` binary, run as a child process.
enum CLI {
    struct Result {
        let status: Int32
        let signaled: Bool
        let stdout: String
        let stderr: String
        var json: Any? { try? JSONSerialization.jsonObject(with: Data(stdout.utf8)) }
    }

    /// The same binary the other CLI tests run (RECEIPT_BINARY first, then the one built beside the
    /// tests, in any scratch path).
    static var binary: String { ReceiptBinary.path }

    static func start(_ args: [String], output: String) throws -> Process {
        guard FileSystem.exists(binary) else {
            throw HarnessError("the receipt binary is not built at \(binary): run tools/test (it builds it)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = args
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "RECEIPT_VAULT")
        process.environment = env
        _ = FileManager.default.createFile(atPath: output + ".out", contents: nil)
        _ = FileManager.default.createFile(atPath: output + ".err", contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output + ".out"))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: output + ".err"))
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return process
    }

    static func wait(_ process: Process, output: String) async -> Result {
        while process.isRunning { try? await Task.sleep(nanoseconds: 10_000_000) }
        let out = (try? String(contentsOfFile: output + ".out", encoding: .utf8)) ?? ""
        let err = (try? String(contentsOfFile: output + ".err", encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: output + ".out")
        try? FileManager.default.removeItem(atPath: output + ".err")
        return Result(status: process.terminationStatus, signaled: process.terminationReason == .uncaughtSignal,
                      stdout: out, stderr: err)
    }

    /// Runs `receipt ARGS` to completion.
    static func run(_ args: [String], in folder: TemporaryFolder) async throws -> Result {
        let output = folder.file("cli-" + SecureRandom.hex(6))
        let process = try start(args, output: output)
        return await wait(process, output: output)
    }
}

/// One member of a household: an account on the server and a vault of its own.
struct Member {
    let name: String
    let token: String
    let vault: String
    let folder: TemporaryFolder

    func run(_ args: [String]) async throws -> CLI.Result {
        try await CLI.run(args + ["--vault", vault], in: folder)
    }

    /// Runs and requires exit status 0.
    @discardableResult
    func ok(_ args: [String], file: StaticString = #filePath, line: UInt = #line) async throws -> CLI.Result {
        let r = try await run(args)
        XCTAssertEqual(r.status, 0, "receipt \(args.joined(separator: " ")) failed: \(r.stderr)", file: file, line: line)
        return r
    }

    func sync(file: StaticString = #filePath, line: UInt = #line) async throws -> [String: Any] {
        let r = try await ok(["sync", "--json"], file: file, line: line)
        return r.json as? [String: Any] ?? [:]
    }

    /// `list --json`, by id.
    func receipts(zone: String? = nil) async throws -> [String: [String: Any]] {
        let r = try await ok(["list", "--json"] + (zone.map { ["--zone", $0] } ?? []))
        var out: [String: [String: Any]] = [:]
        for item in r.json as? [[String: Any]] ?? [] { if let id = item["id"] as? String { out[id] = item } }
        return out
    }

    func zones() async throws -> [[String: Any]] {
        try await ok(["zone", "list", "--json"]).json as? [[String: Any]] ?? []
    }
}

/// A server and its household, in one temporary folder.
final class Household: @unchecked Sendable {
    /// The server catalog households of the running test use: nil for the embedded one, else a
    /// `postgres://` URL (set by the PostgreSQL subclasses' setUp; tests run one at a time).
    nonisolated(unsafe) static var database: String?

    let folder: TemporaryFolder
    var server: TestServer
    var members: [String: Member] = [:]

    init(folder: TemporaryFolder, server: TestServer) {
        self.folder = folder
        self.server = server
    }

    /// `tls`: the server's certificate and key, made in the household's folder; `trust`: the
    /// arguments `remote set` verifies the server with (`--pin SHA` or `--ca-file PEM`).
    static func start(_ names: [String], limits: ServerLimits = ServerLimits(),
                      tls: ((TemporaryFolder) throws -> (TLSIdentity, [String]))? = nil) async throws -> Household {
        let folder = TemporaryFolder("receipt-sync")
        let data = folder.file("server")
        var tokens: [String: String] = [:]
        for name in names { tokens[name] = try await TestServer.addAccount(name, data: data) }
        let secured = try tls.map { try $0(folder) }
        let household = Household(folder: folder, server: try await TestServer.start(data: data, limits: limits, tls: secured?.0))
        for name in names {
            let member = Member(name: name, token: tokens[name] ?? "", vault: folder.file("vault-" + name), folder: folder)
            try await member.ok(["init", "--inline-threshold", "1024"])
            try await member.ok(["remote", "set", household.server.url, "--account", name, "--token", member.token]
                                + (secured?.1 ?? []))
            household.members[name] = member
        }
        return household
    }

    subscript(_ name: String) -> Member {
        guard let m = members[name] else { fatalError("no member \(name) in this test household") }
        return m
    }

    var raw: Raw { Raw(base: server.url) }

    /// Writes a file of `size` pseudo-random bytes and returns its path and address.
    func file(_ name: String, size: Int, seed: UInt64) throws -> (path: String, sha256: String) {
        let bytes = TestData.random(size, seed: seed)
        let path = try folder.write("files/" + name, bytes)
        return (path, SHA256Hasher.hash(bytes).hex)
    }

    func shutdown() async { await server.stop() }
}

/// Extracts the id of the one receipt `import --json` reports.
func importedID(_ result: CLI.Result, file: StaticString = #filePath, line: UInt = #line) -> String {
    let imported = (result.json as? [String: Any])?["imported"] as? [[String: Any]]
    let id = imported?.first?["id"] as? String
    XCTAssertNotNil(id, "import reported no receipt: \(result.stdout) \(result.stderr)", file: file, line: line)
    return id ?? ""
}

// XCTest's assertions take autoclosures, which cannot await: these evaluate first, then assert.
func checkEqual<T: Equatable>(_ a: T, _ b: T, _ message: @autoclosure () -> String = "",
                              file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(a, b, message(), file: file, line: line)
}

func checkNotEqual<T: Equatable>(_ a: T, _ b: T, _ message: @autoclosure () -> String = "",
                                 file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertNotEqual(a, b, message(), file: file, line: line)
}

func checkTrue(_ a: Bool, _ message: @autoclosure () -> String = "", file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertTrue(a, message(), file: file, line: line)
}

func checkFalse(_ a: Bool, _ message: @autoclosure () -> String = "", file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertFalse(a, message(), file: file, line: line)
}

/// A failure of the test set-up itself (thrown, so the test fails rather than being skipped).
struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The base of the suites that run households: a subclass whose `postgres` is true runs every
/// inherited test again with the server's catalog in a fresh PostgreSQL database.
class HouseholdTestCase: XCTestCase {
    class var postgres: Bool { false }

    override func setUp() async throws {
        try await super.setUp()
        Household.database = Self.postgres ? try PostgresCluster.shared().createDatabase() : nil
    }

    override func tearDown() async throws {
        Household.database = nil
        try await super.tearDown()
    }
}

/// What the store-level suites (ServerStoreConformanceTests, WebStoreTests) share.
extension XCTestCase {
    /// A new account on `store`, as its token authenticates it.
    func account(_ store: any ServerStore, _ name: String) async throws -> Account {
        let token = try await store.addAccount(name, quota: nil)
        let found = try await store.authenticate(token: token)
        return try XCTUnwrap(found)
    }

    /// `body` is refused with a ServerError of status `code`.
    func assertServerError<T>(_ code: Int, _ body: () async throws -> T, file: StaticString = #filePath, line: UInt = #line) async {
        do {
            _ = try await body()
            XCTFail("expected a \(code) refusal", file: file, line: line)
        } catch let error as ServerError {
            XCTAssertEqual(error.code, code, error.message, file: file, line: line)
        } catch {
            XCTFail("expected a ServerError \(code), got \(error)", file: file, line: line)
        }
    }
}
