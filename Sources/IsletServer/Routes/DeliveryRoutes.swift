import Foundation
import Hummingbird
import IsletAPNs
import IsletCore
import IsletEngine

/// The provider side: an app's Apple credentials, phones' tokens, and the delivery log
/// (docs/delivery.md).
struct DeliveryRoutes {
    let engine: Engine
    let maxBodySize: Int

    func add(to router: Router<IsletRequestContext>) {
        router.put("v1/apps/:bundleId/delivery", use: putCredential)
        router.get("v1/apps/:bundleId/delivery", use: getCredentials)
        router.delete("v1/apps/:bundleId/delivery", use: deleteCredentials)
        router.post("v1/apps/:bundleId/delivery/keys", use: addKey)
        router.get("v1/apps/:bundleId/delivery/keys", use: getKeys)
        router.delete("v1/apps/:bundleId/delivery/keys/:keyId", use: deleteKey)
        router.put("v1/devices/:id/push-to-start-tokens/:attributesType", use: putPushToStartToken)
        router.get("v1/devices/:id", use: getDevice)
        router.put("v1/activities/:id/push-token", use: putUpdateToken)
        router.get("v1/activities/:id/deliveries", use: deliveries)
        router.post("v1/deliveries/:id/retry", use: retry)
    }

    // MARK: Credentials

    @Sendable func putCredential(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try context.requireAdmin()
        let key = try await self.key(request, bundleId: try context.parameters.require("bundleId"))
        return try Response.json(try await engine.putDeliveryCredential(key))
    }

    /// `POST …/delivery/keys`: one more key in the environment's set (docs/delivery.md, "Key sets").
    @Sendable func addKey(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try context.requireAdmin()
        let key = try await self.key(request, bundleId: try context.parameters.require("bundleId"))
        return try Response.json(try await engine.addDeliveryKey(key), status: .created)
    }

    @Sendable func getKeys(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try context.actingApp(requested: try context.parameters.require("bundleId"))
        return try Response.json(["keys": try await engine.deliveryCredentials(bundleId: bundleId)])
    }

    @Sendable func deleteKey(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try context.requireAdmin()
        try await engine.deleteDeliveryKey(
            bundleId: try context.parameters.require("bundleId"), keyId: try context.parameters.require("keyId"),
            environment: try Self.environment(request)
        )
        return Response(status: .noContent)
    }

    /// A key as a body gives it, its ids and topics checked where they enter.
    private func key(_ request: Request, bundleId: BundleID) async throws -> StoredCredential {
        let body = try await request.decodeJSON(DeliveryCredentialBody.self, limit: maxBodySize)
        let ids = [("keyId", body.keyId), ("teamId", body.teamId)] + (body.relatedKeyId.map { [("relatedKeyId", $0)] } ?? [])
        for (name, value) in ids {
            guard !value.isEmpty, value.count <= 64, value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
                throw IsletError(.invalidRequest, "\(name) must be ASCII letters and digits, like Apple's 10-character ids.")
            }
        }
        let kind = body.kind ?? .team
        if kind == .team, body.topics != nil || body.relatedKeyId != nil {
            throw IsletError(.invalidRequest, "topics and relatedKeyId belong to a topic-specific key (\"kind\": \"topic\"); a team-scoped key signs for every topic.")
        }
        for topic in body.topics ?? [] {
            guard (1...155).contains(topic.utf8.count), topic.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-.".contains($0)) }) else {
                throw IsletError(.invalidRequest, "A topic is a bundle id (letters, digits, - and .); \"\(topic.prefix(80))\" is not one.")
            }
        }
        // The address is read by the one rule the sender reads it by; the rest of what the
        // sender needs (the authority, a key that signs) is checked by the engine's transport.
        let url = try body.url.map { try PushServerAddress($0).description }
        let credential = DeliveryCredential(
            bundleId: bundleId, environment: body.environment, teamId: body.teamId, keyId: body.keyId, kind: kind, topics: body.topics,
            relatedKeyId: body.relatedKeyId, url: url, caCertificate: body.caCertificate, createdAt: engine.clock.now()
        )
        return StoredCredential(credential: credential, privateKey: body.privateKey)
    }

    private static func environment(_ request: Request) throws -> APNsEnvironment? {
        try request.query("environment").map { name in
            guard let environment = APNsEnvironment(rawValue: name) else {
                throw IsletError(.invalidRequest, "environment is development or production.")
            }
            return environment
        }
    }

    @Sendable func getCredentials(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try context.actingApp(requested: try context.parameters.require("bundleId"))
        return try Response.json(["credentials": try await engine.deliveryCredentials(bundleId: bundleId)])
    }

    @Sendable func deleteCredentials(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try context.requireAdmin()
        let bundleId = try context.parameters.require("bundleId")
        let environment = try Self.environment(request)
        guard try await engine.deleteDeliveryCredentials(bundleId: bundleId, environment: environment) > 0 else {
            throw IsletError(.keyNotFound, "\(bundleId) has no delivery credentials\(environment.map { " for \($0.rawValue)" } ?? "").")
        }
        return Response(status: .noContent)
    }

    // MARK: Tokens

    /// An app's key, the admin's naming `bundleId`, or an installation's credential for its own
    /// device (docs/installations.md).
    @Sendable func putPushToStartToken(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let deviceId = try context.parameters.require("id")
        let attributesType = try context.parameters.require("attributesType")
        let body = try await request.decodeJSON(PushToStartTokenBody.self, limit: maxBodySize)
        let installed = try context.installationReporting(on: deviceId, for: body.bundleId)
        if installed == nil { _ = try context.appScope() }
        let bundleId = try installed ?? context.actingApp(requested: body.bundleId)
        if installed != nil { try await engine.checkPushToStartRoom(deviceId: deviceId, bundleId: bundleId, attributesType: attributesType) }
        let token = try await engine.registerPushToStartToken(
            body.token, environment: body.environment, deviceId: deviceId, bundleId: bundleId, attributesType: attributesType
        )
        if installed != nil { try await engine.installationUsed(deviceId) }
        return try Response.json(token)
    }

    /// An app's key, the admin's, or an installation's credential for an activity on its device
    /// of its app (another is not found, as one that does not exist).
    @Sendable func putUpdateToken(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(PushTokenBody.self, limit: maxBodySize)
        if let (installation, bundleId) = context.installation {
            // No prefixes: an installation learns no other activity's id.
            let id = try await engine.activityID(in: context, owner: bundleId, prefixes: false)
            let token = try await engine.registerUpdateToken(body.token, deviceId: installation, activityId: id, owner: bundleId, onDevice: true)
            try await engine.installationUsed(installation)
            return try Response.json(token)
        }
        let owner = try context.appScope()
        let id = try await engine.activityID(in: context, owner: owner)
        let token = try await engine.registerUpdateToken(body.token, deviceId: body.device, activityId: id, owner: owner)
        return try Response.json(token)
    }

    @Sendable func getDevice(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let deviceId = try context.parameters.require("id")
        let owner = try context.appScope()
        var phone = try await engine.phone(deviceId)
        // An app sees its own tokens only.
        if let owner { phone.tokens = phone.tokens.filter { $0.bundleId == owner } }
        return try Response.json(PhoneBody(device: phone.device, tokens: phone.tokens))
    }

    // MARK: The log

    @Sendable func deliveries(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let owner = try context.operatorScope()
        let id = try await engine.activityID(in: context, owner: owner)
        let page = try request.page(of: EventID.self)
        let lines = page.page(ofAll: try await engine.deliveries(of: id, owner: owner)) { $0.event }
        return try Response.json(
            Listing("deliveries", lines.map { DeliveryLine(time: $0.time, report: context.showsTokens ? $0.report : $0.report.withoutTokens) })
        )
    }

    /// Sends a failed, held or waiting delivery again at once; the log says who asked.
    @Sendable func retry(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let owner = try context.operatorScope()
        guard let id = Int64(try context.parameters.require("id")), id > 0 else {
            throw IsletError(.deliveryNotFound, "A delivery id is a whole number, as the delivery log gives it.")
        }
        let asker =
            switch context.owner {
            case .admin: "the admin key"
            case .app(let bundleId): "\(bundleId)'s key"
            default: "the console, without a key, on this machine"
            }
        let delivery = try await engine.retryDelivery(id, owner: owner, by: asker)
        return try Response.json(RetriedDelivery(delivery: delivery.id, state: delivery.state.rawValue, nextAttemptAt: delivery.nextAttemptAt))
    }
}
