import Foundation
@testable import ReceiptServer
import TestSupport
import XCTest

/// The generated authorization test (issue #30): every route the server's router knows — listed by
/// the router itself, so a new route cannot escape — probed by every role (owner, write and read
/// member, outsider, signed out, and a credential of the other surface) on the caller's own zone, a
/// shared one, a foreign one and one that does not exist, with real, malformed, extreme and
/// well-formed-but-unknown parameters. Each answer must have the status RouteTable gives for it
/// (never 5xx), and hold nothing of a zone the caller cannot read. Run over the embedded catalog
/// here and over PostgreSQL by PostgresRouteAuthorizationTests.
final class RouteAuthorizationTests: XCTestCase {
    /// `database`: nil for the embedded SQLite catalog, else a `postgres://` URL.
    static func makeProber(database: String? = nil) async throws -> RouteProber {
        let fixture = RouteFixture(database: database)
        try await fixture.build()
        let store = try await fixture.copy()
        let routes = RouteProber.routes(of: RouteProber.router(store))
        try await store.close()
        return RouteProber(fixture: fixture, routes: routes)
    }

    func testEveryRouteTheRouterKnowsHasAnExpectation() async throws {
        let prober = try await Self.makeProber()
        XCTAssertGreaterThan(prober.routes.count, 20, "the router lists its routes: \(prober.routes)")
        for route in prober.routes where RouteTable.rules[route] == nil {
            XCTFail("the router has \(route), which RouteTable does not know: say there who may call it and what each caller gets")
        }
        for route in RouteTable.rules.keys.sorted() where !prober.routes.contains(route) {
            XCTFail("RouteTable has \(route), which the router no longer has: remove it")
        }
    }

    func testEveryRouteAnswersEachRoleAsDocumentedAndShowsNothingOfOtherZones() async throws {
        try await Self.probeEveryRoute(try await Self.makeProber())
    }

    static func probeEveryRoute(_ prober: RouteProber, file: StaticString = #filePath, line: UInt = #line) async throws {
        var probes: [(Probe, RouteRule)] = []
        for route in prober.routes {
            guard let rule = RouteTable.rules[route] else {
                XCTFail("the router has \(route), which RouteTable does not know", file: file, line: line)
                continue
            }
            probes += prober.probes(route, rule).map { ($0, rule) }
        }
        probes += prober.strayProbes()
        let started = Date()
        let problems = try await prober.run(probes)
        print("RouteAuthorizationTests: \(probes.count) probes of \(prober.routes.count) routes in "
              + String(format: "%.1f s", Date().timeIntervalSince(started)))
        for problem in problems.prefix(300) { XCTFail(problem, file: file, line: line) }
        if problems.count > 300 { XCTFail("… and \(problems.count - 300) more problems", file: file, line: line) }
    }
}

/// The same probes with the server's catalog in a real PostgreSQL (each copy of the fixture a
/// database made from the fixture's with `CREATE DATABASE … TEMPLATE`).
final class PostgresRouteAuthorizationTests: XCTestCase {
    func testEveryRouteAnswersEachRoleAsDocumentedAndShowsNothingOfOtherZonesOnPostgreSQL() async throws {
        let database = try PostgresCluster.shared().createDatabase()
        try await RouteAuthorizationTests.probeEveryRoute(try await RouteAuthorizationTests.makeProber(database: database))
    }
}
