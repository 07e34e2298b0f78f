import Foundation
import Hummingbird
import IsletCore
import IsletEngine

/// `/v1/activities`: start, read, update, end, dismiss and list activities, and read their history.
struct ActivityRoutes {
    let engine: Engine
    let maxBodySize: Int

    func add(to router: Router<IsletRequestContext>) {
        let activities = router.group("v1/activities")
        activities.post(use: start)
        activities.get(use: list)
        activities.put("by-key/:key", use: startOrUpdate)
        activities.get(":id", use: get)
        activities.post(":id/update", use: update)
        activities.post(":id/end", use: end)
        activities.post(":id/dismiss", use: dismiss)
        activities.post(":id/phone-report", use: phoneReport)
        activities.get(":id/events", use: history)
        activities.get(":id/status", use: status)
    }

    @Sendable func start(_ request: Request, context: IsletRequestContext) async throws -> Response {
        // Before the body: a key that cannot act for an app (none, or a display's) learns so first.
        _ = try context.appScope()
        let (body, at) = try await request.decodeScheduledJSON(StartActivityBody.self, limit: maxBodySize)
        try body.request.validateCallersSource()
        let bundleId = try context.actingApp(requested: body.bundleId)
        if let at {
            return try Response.json(try await engine.scheduleStart(body.request, bundleId: bundleId, at: at), status: .accepted)
        }
        let outcome = try await engine.start(body.request, bundleId: bundleId)
        return try respond(with: outcome, status: .created)
    }

    @Sendable func startOrUpdate(_ request: Request, context: IsletRequestContext) async throws -> Response {
        _ = try context.appScope()
        let key = try context.parameters.require("key")
        guard (1...256).contains(key.unicodeScalars.count) else {
            throw IsletError(.invalidRequest, "The key must be 1 to 256 characters.")
        }
        let body = try await request.decodeJSON(StartOrUpdateBody.self, limit: maxBodySize)
        // The whole body, even when it only updates: a live activity under the key reads its content.
        try body.request.validate()
        try body.request.validateCallersSource()
        let bundleId = try context.actingApp(requested: body.bundleId)
        let outcome = try await engine.startOrUpdate(
            key: key, request: body.request, timestamp: body.timestamp, end: body.end, bundleId: bundleId
        )
        return try respond(with: outcome, status: outcome.created ? .created : .ok)
    }

    @Sendable func list(_ request: Request, context: IsletRequestContext) async throws -> Response {
        var filter = ActivityFilter()
        filter.bundleId = try context.operatorScope() ?? request.query("bundleId")
        filter.deviceId = request.query("device")
        filter.attributesType = request.query("type")
        if let states = request.query("state") {
            filter.states = Set(try states.split(separator: ",").map { name in
                guard let state = ActivityState(rawValue: String(name)) else {
                    throw IsletError(.invalidRequest, "Unknown state \"\(name)\"; use pending, active, stale, ended or dismissed.")
                }
                return state
            })
        }
        if let query = request.query("q") {
            guard query.unicodeScalars.count <= 256 else {
                throw IsletError(.invalidRequest, "q is the first characters of an id or a key: at most 256.")
            }
            filter.query = query
        }
        filter.updatedSince = try request.date("updatedSince")
        filter.page = try request.page(of: ActivityPlace.self)
        let page = try await engine.activities(filter)
        return try Response.json(Listing("activities", context.showsTokens ? page : page.map(\.withoutTokens)))
    }

    @Sendable func get(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let owner = try context.operatorScope()
        let activity = try await engine.activity(try await engine.activityID(in: context, owner: owner), owner: owner)
        return try Response.json(context.showsTokens ? activity : activity.withoutTokens)
    }

    @Sendable func update(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let owner = try context.appScope()
        let (update, at) = try await request.decodeScheduledJSON(ContentUpdate.self, limit: maxBodySize)
        let id = try await engine.activityID(in: context, owner: owner)
        if let at {
            return try Response.json(try await engine.scheduleChange(.update(update), to: id, owner: owner, at: at), status: .accepted)
        }
        let outcome = try await engine.apply(.update(update), to: id, owner: owner)
        return try respond(with: outcome)
    }

    @Sendable func end(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let owner = try context.operatorScope()
        let (end, at) = try await request.decodeScheduledJSON(EndRequest.self, limit: maxBodySize, emptyAs: EndRequest())
        let id = try await engine.activityID(in: context, owner: owner)
        if let at {
            return try Response.json(try await engine.scheduleChange(.end(end), to: id, owner: owner, at: at), status: .accepted)
        }
        let outcome = try await engine.apply(.end(end), to: id, owner: owner)
        return try respond(with: outcome, withoutTokens: !context.showsTokens)
    }

    @Sendable func dismiss(_ request: Request, context: IsletRequestContext) async throws -> Response {
        // Who may dismiss at all is settled before the lookup, and another device's activity is
        // not found, as another app's is: no refusal tells whether an id exists.
        try context.requireSomeDisplay()
        let id = try await engine.activityID(in: context, owner: nil, prefixes: context.owner == .admin)
        let outcome = try await engine.dismiss(id) { [context] activity in
            if case .device(let own) = context.owner, own != activity.deviceId {
                throw IsletError(.activityNotFound, "No activity \(id).")
            }
        }
        return try respond(with: outcome, withoutTokens: context.owner == nil)
    }

    /// A real phone's app reports what ActivityKit told it: with the app's key (its own
    /// activities), the device's key (its own device's), or the admin key. Another app's or
    /// device's activity is not found.
    @Sendable func phoneReport(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let owner = try context.requireOwner()
        // Refused before the lookup, so the answer is the same whether the activity exists.
        if case .client = owner { throw IsletRequestContext.clientKeyOnly }
        let id = try await engine.activityID(in: context, owner: nil, prefixes: owner == .admin)
        let body = try await request.decodeJSON(PhoneReportBody.self, limit: maxBodySize)
        let outcome = try await engine.report(body.state, on: id) { activity in
            switch owner {
            case .admin: return
            case .app(let bundleId) where bundleId == activity.bundleId: return
            case .device(let deviceId) where deviceId == activity.deviceId: return
            // An installation's own activity: on its device, of its app.
            case .installation(let installation, let bundleId) where installation == activity.deviceId && bundleId == activity.bundleId: return
            case .app, .device, .installation: throw IsletError(.activityNotFound, "No activity \(id).")
            case .client: throw IsletRequestContext.clientKeyOnly
            }
        }
        return try respond(with: outcome)
    }

    /// "Why isn't it showing?": the phone's side, the budget, the renewal, the last refusal.
    @Sendable func status(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let owner = try context.operatorScope()
        return try Response.json(try await engine.status(of: try await engine.activityID(in: context, owner: owner), owner: owner))
    }

    @Sendable func history(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let owner = try context.operatorScope()
        let page = try request.page(of: EventID.self)
        var events = try await engine.history(of: try await engine.activityID(in: context, owner: owner), owner: owner)
        if !context.showsTokens { events = events.compactMap(\.withoutTokens) }
        return try Response.json(Listing("events", try page.page(ofAll: events) { $0.id }.map { try $0.decoded() }))
    }

    /// The activity, or — when the rules ignored the input — the reason, with `409 Conflict`.
    /// The ignored input is in the activity's history either way.
    /// The answer to a change: the activity as it now is, or the refusal of an ignored update.
    ///
    /// - Parameter withoutTokens: Leave the push token out, for a display without a key.
    private func respond(
        with outcome: Outcome, status: HTTPResponse.Status = .ok, withoutTokens: Bool = false
    ) throws -> Response {
        let (status, body) = try Self.encodedAnswer(for: outcome, status: status, withoutTokens: withoutTokens)
        return Response.json(encoded: body, status: status)
    }

    /// What a change's answer is: its status and body in wire format (the route's, and a hot
    /// route's on its event loop).
    static func encodedAnswer(
        for outcome: Outcome, status: HTTPResponse.Status = .ok, withoutTokens: Bool = false
    ) throws -> (HTTPResponse.Status, String) {
        if let ignored = outcome.transition.ignored {
            return (ignored.error.reason.httpStatus, ignored.error.wireBody)
        }
        if withoutTokens {
            return (status, try WireFormat.string(outcome.activity.withoutTokens))
        }
        if !outcome.warnings.isEmpty {
            return (status, try WireFormat.string(Warned(outcome.activity, warnings: outcome.warnings)))
        }
        if let body = outcome.body {
            return (status, body)
        }
        return (status, try WireFormat.string(outcome.activity))
    }
}
