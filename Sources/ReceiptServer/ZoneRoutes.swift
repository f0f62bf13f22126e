import Hummingbird
import ReceiptWire

/// `/v1/account`, `/v1/zones…`: zones, shares, push and pull.
struct ZoneRoutes {
    let catalog: any ServerStore
    let limits: ServerLimits

    func register(_ group: RouterGroup<ServerContext>) {
        group.get("account") { _, context in
            let caller = try context.caller()
            return try jsonResponse(WireAccount(account: caller.name, textSeq: try await catalog.textSequence(caller: caller)))
        }
        group.get("zones") { _, context in
            try jsonResponse(WireZoneList(zones: try await catalog.zones(for: context.caller())))
        }
        group.put("zones/:owner/:zone") { _, context in
            let created = try await catalog.createZone(owner: context.name("owner"), name: context.name("zone"),
                                                       caller: context.caller())
            return try jsonResponse(WireZone(owner: context.name("owner"), name: context.name("zone"), role: .owner,
                                             shared: false), status: created ? .created : .ok)
        }
        group.delete("zones/:owner/:zone") { _, context in
            try await catalog.deleteZone(owner: context.name("owner"), name: context.name("zone"), caller: context.caller())
            return Response(status: .noContent)
        }
        group.get("zones/:owner/:zone/shares") { _, context in
            try jsonResponse(WireShareList(shares: try await catalog.shares(
                owner: context.name("owner"), name: context.name("zone"), caller: context.caller())))
        }
        group.put("zones/:owner/:zone/shares/:account") { request, context in
            let body = try await request.decodeJSON(WireShareRequest.self, limit: limits.maxSmallJSON)
            try await catalog.share(owner: context.name("owner"), name: context.name("zone"),
                                    with: context.name("account"), role: body.role, caller: context.caller())
            return Response(status: .noContent)
        }
        group.delete("zones/:owner/:zone/shares/:account") { _, context in
            try await catalog.unshare(owner: context.name("owner"), name: context.name("zone"),
                                      with: context.name("account"), caller: context.caller())
            return Response(status: .noContent)
        }
        group.post("zones/:owner/:zone/push") { request, context in
            let body = try await request.decodeJSON(WirePushRequest.self, limit: limits.maxPushBody)
            try DeclaredTypes.check(body, store: catalog.blobs)
            return try jsonResponse(try await catalog.push(body, owner: context.name("owner"), name: context.name("zone"),
                                                           caller: context.caller()))
        }
        group.get("zones/:owner/:zone/changes") { request, context in
            let query = request.uri.queryParameters
            var limit = WireProtocol.defaultPageSize
            if let text = query.get("limit") {
                guard let n = Int(text), (1...WireProtocol.maxPageSize).contains(n) else {
                    throw ServerError.bad("limit must be a number from 1 to \(WireProtocol.maxPageSize)")
                }
                limit = n
            }
            return try jsonResponse(try await catalog.changes(
                owner: context.name("owner"), name: context.name("zone"), since: query.get("since"), limit: limit,
                caller: context.caller()))
        }
    }
}
