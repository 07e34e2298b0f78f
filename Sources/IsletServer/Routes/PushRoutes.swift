import Foundation
import Hummingbird
import IsletAPNs
import IsletCore
import IsletEngine

/// The REST side of pushes: provider keys, activity types' shapes, strict mode, broadcast
/// channels, and token rotation.
struct PushRoutes {
    let engine: Engine
    let apns: APNsSettings
    let maxBodySize: Int

    func add(to router: Router<IsletRequestContext>) {
        router.patch("v1/apps/:bundleId", use: updateApp)
        router.post("v1/apps/:bundleId/keys", use: addKey)
        router.get("v1/apps/:bundleId/keys", use: listKeys)
        router.delete("v1/apps/:bundleId/keys/:keyId", use: deleteKey)
        router.put("v1/apps/:bundleId/activity-types/:name", use: putActivityType)
        router.get("v1/apps/:bundleId/activity-types", use: listActivityTypes)
        router.post("v1/apps/:bundleId/channels", use: createChannel)
        router.get("v1/apps/:bundleId/channels", use: listChannels)
        router.delete("v1/apps/:bundleId/channels/:channelId", use: deleteChannel)
        router.post("v1/apps/:bundleId/channels/:channelId/broadcast", use: broadcast)
        router.post("v1/activities/:id/rotate-push-token", use: rotateActivityToken)
        router.post("v1/devices/:id/apps/:bundleId/rotate-push-to-start-token", use: rotatePushToStartToken)
    }

    /// The app in the path, if the key may act for it.
    private func app(_ context: IsletRequestContext) throws -> BundleID {
        try context.actingApp(requested: try context.parameters.require("bundleId"))
    }

    // MARK: App

    @Sendable func updateApp(_ request: Request, context: IsletRequestContext) async throws -> Response {
        // The app's key, the admin's, or the console's on a loopback server.
        let bundleId: BundleID
        if context.owner == nil {
            try context.requireOperator()
            bundleId = try context.parameters.require("bundleId")
        } else {
            bundleId = try app(context)
        }
        let body = try await request.decodeJSON(UpdateAppBody.self, limit: maxBodySize)
        guard body.strictPushes != nil || body.deliveryPaused != nil else {
            return try Response.json(try await engine.app(bundleId))
        }
        return try Response.json(try await engine.updateApp(bundleId, strictPushes: body.strictPushes, deliveryPaused: body.deliveryPaused))
    }

    // MARK: Provider keys

    @Sendable func addKey(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try app(context)
        let body = try await request.decodeJSON(ProviderKeyBody.self, limit: maxBodySize)
        for (name, value) in [("keyId", body.keyId), ("teamId", body.teamId)] {
            guard !value.isEmpty, value.count <= 64, value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
                throw IsletError(.invalidRequest, "\(name) must be ASCII letters and digits, like Apple's 10-character ids.")
            }
        }
        let publicKey: String
        switch (body.privateKey, body.publicKey) {
        case (let p8?, nil):
            guard let derived = try? ProviderTokenSigner.publicKey(ofP8: p8) else {
                throw IsletError(.invalidRequest, "privateKey must be the PEM text of an ES256 .p8 key (BEGIN PRIVATE KEY).")
            }
            publicKey = derived
        case (nil, let pem?):
            guard (try? ProviderTokenSigner.checkPublicKey(pem)) != nil else {
                throw IsletError(.invalidRequest, "publicKey must be the PEM text of a P-256 public key (BEGIN PUBLIC KEY).")
            }
            publicKey = pem
        default:
            throw IsletError(.invalidRequest, "Send privateKey (the .p8 file's text) or publicKey, not both and not neither.")
        }
        let key = ProviderKey(
            keyId: body.keyId, teamId: body.teamId, bundleId: bundleId, publicKey: publicKey, createdAt: engine.clock.now(),
            kind: body.kind ?? .topic, environment: body.environment
        )
        try await engine.addProviderKey(key)
        return try Response.json(key, status: .created)
    }

    @Sendable func listKeys(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try Response.json(["keys": try await engine.providerKeys(bundleId: try app(context))])
    }

    @Sendable func deleteKey(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try await engine.deleteProviderKey(keyId: try context.parameters.require("keyId"), bundleId: try app(context))
        return Response(status: .noContent)
    }

    // MARK: Activity types

    @Sendable func putActivityType(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try app(context)
        let name = try context.parameters.require("name")
        try ActivityRequest.validate(attributesType: name)
        let body = try await request.decodeJSON(ActivityTypeBody.self, limit: maxBodySize)
        let type = ActivityType(
            bundleId: bundleId, name: name, attributes: try body.attributes.map { try Shape.parse($0, path: "attributes") },
            contentState: try body.contentState.map { try Shape.parse($0, path: "contentState") }
        )
        try await engine.putActivityType(type)
        return try Response.json(type)
    }

    @Sendable func listActivityTypes(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try Response.json(["activityTypes": try await engine.activityTypes(bundleId: try app(context))])
    }

    // MARK: Channels

    @Sendable func createChannel(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try app(context)
        let body = try await request.decodeJSON(CreateChannelBody.self, limit: maxBodySize)
        guard [0, 1].contains(body.storagePolicy) else {
            throw IsletError(.invalidRequest, "storagePolicy is 0 (no message stored) or 1 (the most recent message kept 8 h).")
        }
        let channel = try await engine.createDeliveredChannel(
            bundleId: bundleId, storagePolicy: body.storagePolicy, limit: apns.maxChannelsPerApp, environment: body.environment
        )
        return try Response.json(channel, status: .created)
    }

    @Sendable func listChannels(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let page = try request.page(of: CreationPlace.self)
        let channels = try await engine.channels(bundleId: try app(context))
        return try Response.json(Listing("channels", page.page(ofAll: channels) { CreationPlace($0.createdAt, $0.id) }))
    }

    @Sendable func deleteChannel(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let id = try context.parameters.require("channelId")
        guard try await engine.deleteDeliveredChannel(id, bundleId: try app(context)) else {
            throw IsletError(.channelNotFound, "No channel \(id).")
        }
        return Response(status: .noContent)
    }

    @Sendable func broadcast(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let id = try context.parameters.require("channelId")
        let body = try await request.decodeJSON(BroadcastBody.self, limit: maxBodySize)
        let outcomes = try await engine.broadcast(body.change, channelId: id, bundleId: try app(context))
        return try Response.json(["activities": outcomes.map(\.activity)])
    }

    // MARK: Tokens

    @Sendable func rotateActivityToken(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try context.requireOperator()
        let outcome = try await engine.rotateToken(of: try await engine.activityID(in: context, owner: nil))
        return try Response.json(context.showsTokens ? outcome.activity : outcome.activity.withoutTokens)
    }

    @Sendable func rotatePushToStartToken(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try context.requireAdmin()
        let deviceId = try context.parameters.require("id")
        let bundleId = try context.parameters.require("bundleId")
        return try Response.json(try await engine.rotatePushToStartToken(deviceId: deviceId, bundleId: bundleId))
    }
}
