import AsyncHTTPClient
import Foundation
import NIOCore
import ReceiptServer
import TestSupport
import XCTest

/// The sign-in throttle (docs/PROTOCOL.md, "Web view"): 3 free failures per account and address
/// pair, then each try waits 1 s, 2 s, 4 s ...; a try counts from the moment it is admitted, so
/// simultaneous tries get no more checks than sequential ones; an address trying many accounts is
/// slowed down on its own; nobody elsewhere can lock an account out.
final class WebThrottleTests: HouseholdTestCase {
    func household() async throws -> Household {
        let h = try await Household.start(["alice"])
        let store = try await ServerDatabase(Household.database).open(dataPath: h.server.data)
        try await store.setPassword(account: "alice", password: "correct horse")
        try await store.close()
        return h
    }

    func testTheTryAfterThreeFailuresWaitsEvenWithTheRightPassword() async throws {
        let h = try await household()
        defer { Task { await h.shutdown() } }
        var web = WebTestClient(port: h.server.port)
        for n in 1...3 { checkEqual(try await web.signIn("alice", "wrong \(n)").status, 401, "failure \(n)") }
        let fourth = try await web.signIn("alice", "correct horse")
        checkEqual(fourth.status, 429, "the fourth try was checked")
        checkEqual(fourth.header("Retry-After"), "1")
        XCTAssertNil(web.cookie)
        // Once the wait is over, one try is checked again.
        let deadline = ContinuousClock.now + .seconds(30)
        var answer = fourth
        while answer.status == 429 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            answer = try await web.signIn("alice", "correct horse")
        }
        checkEqual(answer.status, 303, answer.head)
    }

    func testFiftySimultaneousWrongTriesGetAtMostThreeChecked() async throws {
        let h = try await household()
        defer { Task { await h.shutdown() } }
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 50
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        defer { Task { try? await http.shutdown() } }
        let statuses = try await withThrowingTaskGroup(of: UInt.self) { group in
            for n in 0..<50 {
                group.addTask {
                    var request = HTTPClientRequest(url: h.server.url + "/signin")
                    request.method = .POST
                    request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
                    request.body = .bytes(ByteBuffer(string: "account=alice&password=wrong\(n)"))
                    let response = try await http.execute(request, timeout: .seconds(120))
                    _ = try await response.body.collect(upTo: 1 << 20)
                    return response.status.code
                }
            }
            return try await group.reduce(into: [UInt]()) { $0.append($1) }
        }
        let checked = statuses.filter { $0 == 401 }.count
        XCTAssertLessThanOrEqual(checked, 3, "\(checked) of 50 simultaneous wrong passwords were checked")
        XCTAssertGreaterThanOrEqual(checked, 1)
        checkEqual(statuses.filter { $0 == 429 }.count, 50 - checked, "\(statuses)")
    }

    func testFailuresFromOneAddressDoNotLockTheAccountOutElsewhere() async throws {
        let h = try await household()
        defer { Task { await h.shutdown() } }
        var attacker = WebTestClient(port: h.server.port, source: "127.0.0.2")
        for n in 1...6 { _ = try await attacker.signIn("alice", "guess \(n)") }
        checkEqual(try await attacker.signIn("alice", "correct horse").status, 429, "the attacker's address is not slowed down")
        var owner = WebTestClient(port: h.server.port, source: "127.0.0.3")
        checkEqual(try await owner.signIn("alice", "correct horse").status, 303, "alice is locked out by another address")
    }

    func testOneAddressTryingManyAccountsIsSlowedDown() async throws {
        let h = try await household()
        defer { Task { await h.shutdown() } }
        var sprayer = WebTestClient(port: h.server.port, source: "127.0.0.4")
        var statuses: [Int] = []
        for n in 1...12 { statuses.append(try await sprayer.signIn("user\(n)", "password").status) }
        checkEqual(Array(statuses.prefix(10)), Array(repeating: 401, count: 10), "each account's first failure from an address is checked")
        checkEqual(statuses.last, 429, "an address trying many accounts must be slowed down: \(statuses)")
        checkEqual(try await sprayer.signIn("alice", "correct horse").status, 429)
        var other = WebTestClient(port: h.server.port, source: "127.0.0.5")
        checkEqual(try await other.signIn("alice", "correct horse").status, 303)
    }
}
