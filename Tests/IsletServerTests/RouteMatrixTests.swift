import Crypto
import Foundation
import IsletClient
import IsletCore
import IsletFCM
import IsletServer
import IsletTestSupport
import NIOHTTP1
import Testing

/// docs/security.md's "Every route, by caller", sent for real: every row's request from every
/// caller, on a loopback server with default settings; each answer held to its cell, each
/// refusal to the answer for made-up ids, and every answer to what its caller may see. The
/// tables are read from the docs, so the docs and the server cannot drift apart, and a route
/// either port answers without a row fails the test.
@Suite("Every route, by caller", .hangDetector)
struct RouteMatrixTests {
    @Test func everyRouteAnswersEachCallerAsTheSecurityDocsSay() async throws {
        let rows = try Self.table("## Every route, by caller")
        try await withIslet(webhooks: true) { islet in
            try await World.with(islet) { world in
                let routes = Set(rows.map(\.route))
                #expect(Set(islet.islet.routes).subtracting(routes).sorted() == [], "routes docs/security.md's table leaves out")
                #expect(routes.subtracting(islet.islet.routes).sorted() == [], "rows for routes the server does not answer")
                #expect(Set(Self.recipes.keys).subtracting(rows.map(\.key)).sorted() == [], "recipes for rows the table does not have")
                #expect(rows.allSatisfy { Set($0.cells.keys) == Set(Caller.allCases.map(\.rawValue)) }, "a column for each caller")
                for row in rows {
                    try await Self.check(row, in: world, as: Caller.allCases.compactMap { caller in row.cells[caller.rawValue].map { (caller, $0) } })
                }
                try await world.expectNothingOfAChanged()
            }
        }
    }

    /// With keyless access off, a request without a key from this machine is refused with 401
    /// wherever one through a proxy is refused, and gets what that one gets elsewhere.
    @Test func withKeylessAccessOffEveryRouteAsksForAKeyWhereAProxyIsRefused() async throws {
        let rows = try Self.table("## Every route, by caller")
        try await withIslet({ $0.server.keylessLoopback = false }, webhooks: true) { islet in
            try await World.with(islet) { world in
                for row in rows {
                    let proxied = try #require(row.cells[Caller.proxy.rawValue])
                    let refused = Cell(status: World.isWebSocket(row.request) ? 4401 : 401, reason: "unauthorized")
                    try await Self.check(row, in: world, as: [(.keyless, proxied.status < 400 ? proxied : refused)])
                }
                try await world.expectNothingOfAChanged()
            }
        }
    }

    /// The APNs port's table: what a request with no provider token, and one with B's, gets
    /// for A's topic, tokens and channel.
    @Test func everyAPNsRouteAnswersEachProviderAsTheSecurityDocsSay() async throws {
        let rows = try Self.table("### The APNs port, by caller")
        try await withIslet(webhooks: true) { islet in
            try await World.with(islet) { world in
                let routes = Set(rows.map(\.route))
                #expect(Set(islet.islet.apnsRoutes) == routes, "the APNs port's routes and docs/security.md's table")
                #expect(Set(Self.apnsRecipes.keys) == Set(rows.map(\.key)), "a recipe for every row, and a row for every recipe")
                #expect(rows.allSatisfy { Set($0.cells.keys) == Set(APNsCaller.allCases.map(\.rawValue)) }, "a column for each caller")
                let jwt = try await world.b.jwt()
                for row in rows {
                    try await Self.checkAPNs(row, in: world, jwt: jwt)
                }
                try await world.expectNothingOfAChanged()
            }
        }
    }

    // MARK: The REST port

    /// Who sends a request, in the order each row is sent: the refused first, so a refusal that
    /// changed anything shows in the answer to the one who may.
    enum Caller: String, CaseIterable {
        case proxy = "no key, through a proxy"
        case otherApp = "B's key"
        case otherDevice = "phone-2's key"
        /// B's publishable client key, and the credential of an installation of B's
        /// (docs/installations.md): what a hostile user of B's app holds.
        case clientKey = "B's client key"
        case installation = "B's installation"
        case keyless = "no key, this machine"
    }

    /// Sends one row from each caller, holds the answer to the caller's cell, and sends each
    /// refusal again naming made-up ids.
    private static func check(_ row: Row, in world: World, as callers: [(Caller, Cell)]) async throws {
        let fill: Fill
        if let recipe = recipes[row.key] {
            fill = try await recipe(world)
        } else {
            #expect(!row.request.contains("{") && row.method == "GET", "\(row.key) needs a recipe: what fills it, what it sends")
            fill = Fill()
        }
        let secrets = try await world.secrets()
        for (caller, cell) in callers {
            let sent = Sent(method: row.method, path: fill.path(row.request), body: fill.body)
            let answer = try await world.send(sent, as: caller, expecting: cell, marker: fill.marker)
            let place = "\(row.key), \(caller.rawValue)"
            #expect(answer.status == cell.status, "\(place): \(answer.text.prefix(600))")
            if let reason = cell.reason {
                #expect(answer.reason == reason, "\(place): \(answer.text.prefix(600))")
            }
            for leak in secrets.needles(for: caller) where answer.text.contains(leak) && !sent.text.contains(leak) {
                Issue.record("\(place): the answer holds \(leak): \(answer.text.prefix(600))")
            }
            if caller == .proxy || caller == .keyless, sent.path.hasPrefix("/v1/") {
                for run in hexRuns(in: answer.text) where !sent.text.contains(run) {
                    Issue.record("\(place): the answer holds \(run.count) hex digits: \(answer.text.prefix(600))")
                }
            }
            // As on the APNs port, a token is the capability: whoever holds one learns it is
            // another app's when registering it is refused, never whose.
            guard answer.status >= 400, !row.names.contains("A's registration token") else { continue }
            let phantoms = secrets.phantoms(world)
            let madeUp = fill.phantom(phantoms)
            let phantom = try await world.send(
                Sent(method: row.method, path: madeUp.path(row.request), body: madeUp.body), as: caller, expecting: cell, marker: nil
            )
            #expect(
                phantom.status == answer.status && phantom.body.restoring(phantoms) == answer.body,
                "\(place): a made-up one is answered otherwise — \(answer.status) \(answer.body) / \(phantom.status) \(phantom.body)"
            )
        }
    }

    /// What fills a row's placeholders, the body it sends, and — for an event stream — the change
    /// whose event every reader who may open the stream gets: the stream is read up to it.
    struct Fill: Sendable {
        var values: [String: String] = [:]
        var body: String?
        var marker: (@Sendable () async throws -> String)?

        /// The same fill, with each of A's things in `phantoms` made up.
        func phantom(_ phantoms: [String: String]) -> Fill {
            Fill(values: values.mapValues { phantoms[$0] ?? $0 }, body: body?.replacing(phantoms))
        }

        /// The row's request with its placeholders filled.
        func path(_ request: String) -> String {
            var path = String(request.split(separator: " ", maxSplits: 1)[1])
            for (name, value) in values {
                path = path.replacingOccurrences(of: "{\(name)}", with: value)
            }
            return path
        }
    }

    /// How each row is filled, by the table's route and names; a `GET` with no placeholder needs none.
    static let recipes: [String: @Sendable (World) async throws -> Fill] = [
        "GET /devices/{id} · default": { $0.fill(["id": "default"]) },
        "GET /display/{file} · display.js": { $0.fill() },
        "GET /console/activities/{id} · A's activity": { $0.fill(["id": $0.ride]) },
        "POST /v1/apps · a new app": { $0.fill(body: #"{"bundleId":"com.example.c"}"#) },
        "GET /v1/apps/{bundleId} · A": { $0.fill() },
        "PATCH /v1/apps/{bundleId} · A, delivery paused": { $0.fill(body: #"{"deliveryPaused":true}"#) },
        "POST /v1/apps/{bundleId}/key · A": { $0.fill() },
        "POST /v1/apps/{bundleId}/keys · A, a new key": { world in
            let pem = P256.Signing.PrivateKey().publicKey.pemRepresentation
            return world.fill(body: try WireFormat.string(JSONValue.object(["keyId": "NEWKEY1234", "teamId": "TEAM123456", "publicKey": .string(pem)])))
        },
        "GET /v1/apps/{bundleId}/keys · A": { $0.fill() },
        "DELETE /v1/apps/{bundleId}/keys/{keyId} · A's": { $0.fill() },
        "DELETE /v1/apps/{bundleId}/keys/{keyId} · B, A's key id": { $0.fill(["bundleId": $0.b.bundleId]) },
        "PUT /v1/apps/{bundleId}/activity-types/{name} · A's": { $0.fill(body: #"{"contentState":{"home":"integer"}}"#) },
        "GET /v1/apps/{bundleId}/activity-types · A": { $0.fill() },
        "PUT /v1/apps/{bundleId}/layouts/{attributesType} · A's": { $0.fill(body: World.layout) },
        "GET /v1/apps/{bundleId}/layouts/{attributesType} · A's": { $0.fill() },
        "DELETE /v1/apps/{bundleId}/layouts/{attributesType} · A's": { $0.fill() },
        "GET /v1/apps/{bundleId}/layouts · A": { $0.fill() },
        "POST /v1/apps/{bundleId}/webhooks · A": { $0.fill(body: #"{"url":"http://127.0.0.1:9/hook"}"#) },
        "GET /v1/apps/{bundleId}/webhooks · A": { $0.fill() },
        "GET /v1/apps/{bundleId}/webhooks/{id} · A's": { $0.fill(["id": $0.webhook]) },
        "PATCH /v1/apps/{bundleId}/webhooks/{id} · A's": { $0.fill(["id": $0.webhook], body: #"{"description":"changed"}"#) },
        "DELETE /v1/apps/{bundleId}/webhooks/{id} · A's": { $0.fill(["id": $0.webhook]) },
        "POST /v1/apps/{bundleId}/webhooks/{id}/rotate-secret · A's": { $0.fill(["id": $0.webhook], body: "{}") },
        "POST /v1/apps/{bundleId}/webhooks/{id}/test · A's": { $0.fill(["id": $0.webhook]) },
        "POST /v1/apps/{bundleId}/webhooks/{id}/replay · A's": { $0.fill(["id": $0.webhook], body: #"{"since":"evt_1"}"#) },
        "GET /v1/apps/{bundleId}/webhooks/{id}/attempts · A's": { $0.fill(["id": $0.webhook]) },
        "GET /v1/apps/{bundleId}/webhooks/listen · A": { $0.fill() },
        "GET /v1/apps/{bundleId}/users · A": { $0.fill() },
        "PUT /v1/apps/{bundleId}/users/{externalId} · A's": { $0.fill(["externalId": "fan-1"], body: #"{"tags":{"team":"b"}}"#) },
        "GET /v1/apps/{bundleId}/users/{externalId} · A's": { $0.fill(["externalId": "fan-1"]) },
        "DELETE /v1/apps/{bundleId}/users/{externalId} · A's": { $0.fill(["externalId": "fan-1"]) },
        "POST /v1/apps/{bundleId}/sends · A": { $0.fill(body: #"{"action":"end","key":"k","audience":"all","at":4102444800}"#) },
        "GET /v1/apps/{bundleId}/sends · A": { $0.fill() },
        "GET /v1/apps/{bundleId}/sends/{id} · A's": { $0.fill(["id": $0.send]) },
        "PATCH /v1/apps/{bundleId}/sends/{id} · A's": { $0.fill(["id": $0.send], body: #"{"at":4102444900}"#) },
        "DELETE /v1/apps/{bundleId}/sends/{id} · A's": { $0.fill(["id": $0.send]) },
        "GET /v1/apps/{bundleId}/sends/{id}/targets · A's": { $0.fill(["id": $0.send]) },
        "POST /v1/apps/{bundleId}/channels · A": { $0.fill(body: #"{"storagePolicy":0}"#) },
        "GET /v1/apps/{bundleId}/channels · A": { $0.fill() },
        "DELETE /v1/apps/{bundleId}/channels/{channelId} · A's": { $0.fill() },
        "DELETE /v1/apps/{bundleId}/channels/{channelId} · B, A's channel": { $0.fill(["bundleId": $0.b.bundleId]) },
        "POST /v1/apps/{bundleId}/channels/{channelId}/broadcast · A's": { $0.fill(body: World.broadcast) },
        "POST /v1/apps/{bundleId}/channels/{channelId}/broadcast · B, A's channel": {
            $0.fill(["bundleId": $0.b.bundleId], body: World.broadcast)
        },
        "PUT /v1/apps/{bundleId}/delivery · A": { $0.fill(body: ConsoleRouteTests.credential) },
        "GET /v1/apps/{bundleId}/delivery · A": { $0.fill() },
        "DELETE /v1/apps/{bundleId}/delivery · A": { $0.fill() },
        "POST /v1/apps/{bundleId}/delivery/keys · A": { $0.fill(body: ConsoleRouteTests.credential) },
        "GET /v1/apps/{bundleId}/delivery/keys · A": { $0.fill() },
        "DELETE /v1/apps/{bundleId}/delivery/keys/{keyId} · A's": { $0.fill(["keyId": "PIZZA12345"]) },
        "PUT /v1/apps/{bundleId}/fcm · A": { world in
            let account = try JSONEncoder().encode(try ServiceAccount.issue(project: "islet-matrix", tokenURI: "https://127.0.0.1:2197/token"))
            return world.fill(body: #"{"serviceAccount":"# + String(decoding: account, as: UTF8.self) + "}")
        },
        "GET /v1/apps/{bundleId}/fcm · A": { $0.fill() },
        "DELETE /v1/apps/{bundleId}/fcm · A": { $0.fill() },
        "POST /v1/fcm/service-accounts · a new account": { $0.fill(body: #"{"projectId":"islet-matrix"}"#) },
        "PUT /v1/devices/{id}/fcm-token · default, A": {
            $0.fill(["id": "default"], body: #"{"token":"matrix:APA91bNewToken","bundleId":"\#($0.a.bundleId)"}"#)
        },
        "PUT /v1/devices/{id}/fcm-token · a new phone, A's registration token": {
            $0.fill(["id": "pixel-2"], body: #"{"token":"\#($0.fcmToken)"}"#)
        },
        "POST /v1/apps/{bundleId}/client-keys · A": { $0.fill(body: #"{"name":"another"}"#) },
        "GET /v1/apps/{bundleId}/client-keys · A": { $0.fill() },
        "DELETE /v1/apps/{bundleId}/client-keys/{id} · A's": { $0.fill(["id": $0.aClientKeyId]) },
        "POST /v1/apps/{bundleId}/user-verification-secret · A": { $0.fill() },
        "POST /v1/installations · A": { $0.fill(body: #"{"bundleId":"\#($0.a.bundleId)","platform":"ios"}"#) },
        "GET /v1/installations?bundleId={bundleId} · A": { $0.fill() },
        "GET /v1/installations/{id} · A's installation": { $0.fill(["id": $0.aInstallation]) },
        "PATCH /v1/installations/{id} · A's installation": { $0.fill(["id": $0.aInstallation], body: #"{"tags":{"team":"b"}}"#) },
        "POST /v1/installations/{id}/credential · A's installation": { $0.fill(["id": $0.aInstallation]) },
        "DELETE /v1/installations/{id} · A's installation": { $0.fill(["id": $0.aInstallation]) },
        "POST /v1/devices · a new device": { $0.fill(body: #"{"id":"phone-3"}"#) },
        "GET /v1/devices/{id} · default": { $0.fill(["id": "default"]) },
        "POST /v1/devices/{id}/key · default": { $0.fill(["id": "default"]) },
        "GET /v1/devices/{id}/settings?bundleId={bundleId} · default, A": { $0.fill(["id": "default"]) },
        "GET /v1/devices/{id}/settings?bundleId={bundleId} · pixel (Android), A": { $0.fill(["id": "pixel"]) },
        "PUT /v1/devices/{id}/settings · default, A": {
            $0.fill(["id": "default"], body: #"{"bundleId":"\#($0.a.bundleId)","frequentUpdates":true}"#)
        },
        "GET /v1/devices/{id}/display · default": { $0.fill(["id": "default"]) },
        "PUT /v1/devices/{id}/push-to-start-tokens/{attributesType} · default, A": {
            $0.fill(["id": "default"], body: #"{"token":"\#(World.newToken())","environment":"development","bundleId":"\#($0.a.bundleId)"}"#)
        },
        "POST /v1/devices/{id}/apps/{bundleId}/rotate-push-to-start-token · default, A": { $0.fill(["id": "default"]) },
        "POST /v1/activities · A": { $0.fill(body: World.start(#","bundleId":"\#($0.a.bundleId)""#)) },
        "POST /v1/activities · B, on A's channel": { $0.fill(body: World.start(#","pushType":{"channel":"\#($0.channel)"}"#)) },
        "GET /v1/activities?bundleId={bundleId} · A": { $0.fill() },
        "GET /v1/activities?cursor={cursor} · A's listing's cursor": { $0.fill() },
        "PUT /v1/activities/by-key/{key} · A": { $0.fill(body: World.start(#","bundleId":"\#($0.a.bundleId)""#)) },
        "GET /v1/activities/{id} · A's": { $0.fill(["id": $0.ride]) },
        "POST /v1/activities/{id}/update · A's": { $0.fill(["id": $0.ride], body: #"{"content":{"state":{"speed":3}}}"#) },
        "POST /v1/activities/{id}/end · A's": { $0.fill(["id": try await $0.freshRide()]) },
        "POST /v1/activities/{id}/dismiss · A's": { $0.fill(["id": try await $0.freshRide()]) },
        "POST /v1/activities/{id}/phone-report · A's": { $0.fill(["id": $0.ride], body: #"{"state":"ended"}"#) },
        "POST /v1/activities/{id}/rotate-push-token · A's": { $0.fill(["id": try await $0.freshRide()]) },
        "PUT /v1/activities/{id}/push-token · A's": {
            $0.fill(["id": $0.build], body: #"{"token":"\#(World.newToken())","device":"default"}"#)
        },
        "GET /v1/activities/{id}/events · A's": { $0.fill(["id": $0.ride]) },
        "GET /v1/activities/{id}/deliveries · A's": { $0.fill(["id": $0.build]) },
        "GET /v1/activities/{id}/deliveries · A's, on pixel (Android)": { $0.fill(["id": $0.rideOnPixel]) },
        "GET /v1/activities/{id}/presentation · A's": { $0.fill(["id": $0.ride]) },
        "GET /v1/activities/{id}/status · A's": { $0.fill(["id": $0.ride]) },
        "GET /v1/activities/{id}/presentation?at={eventId} · B's activity, A's event": { $0.fill(["id": $0.bRide]) },
        "POST /v1/deliveries/{id}/retry · A's": { $0.fill(["id": $0.delivery]) },
        "GET /v1/apns/requests?cursor={cursor} · A's activity listing's cursor": { $0.fill() },
        "GET /v1/events?since=0 · —": { world in world.fill(marker: { try await world.mark(world.bOnPhone2, key: world.b.apiKey) }) },
        "GET /v1/events?bundleId={bundleId}&since=0 · A": { world in
            world.fill(marker: { try await world.mark(world.aOnPhone2, key: world.a.apiKey) })
        },
        "GET /v1/events?device={id}&since=0 · default": { world in
            world.fill(["id": "default"], marker: { try await world.mark(world.bRide, key: world.b.apiKey) })
        },
        "GET /v1/events/ws?bundleId={bundleId}&since=0 · A": { world in
            world.fill(marker: { try await world.mark(world.aOnPhone2, key: world.a.apiKey) })
        },
        "GET /v1/events/ws?device={id}&since=0 · default": { world in
            world.fill(["id": "default"], marker: { try await world.mark(world.bRide, key: world.b.apiKey) })
        },
    ]

    // MARK: The APNs port

    /// Who sends a request to the APNs port.
    enum APNsCaller: String, CaseIterable {
        case none = "no provider token"
        case namingA = "B's token, naming A"
        case ownApp = "B's token, its own app"
    }

    /// What an APNs row sends: its placeholders, headers and body.
    struct APNsFill: Sendable {
        var values: [String: String] = [:]
        var headers: [(String, String)] = []
        var body: String?
    }

    static let update = #"{"aps":{"event":"update","content-state":{"speed":7},"timestamp":1}}"#

    /// How each APNs row is filled for each provider: A's topic or path when it names A, B's own
    /// otherwise; A's token or channel either way.
    static let apnsRecipes: [String: @Sendable (World, APNsCaller) -> APNsFill] = [
        "POST /3/device/{token} · A's activity token": { world, caller in
            APNsFill(values: ["token": world.rideToken], headers: world.pushHeaders(caller), body: update)
        },
        "POST /3/device/{token} · A's push-to-start token on default": { world, caller in
            APNsFill(values: ["token": world.pushToStart], headers: world.pushHeaders(caller), body: update)
        },
        "POST /3/device · —": { world, caller in APNsFill(headers: world.pushHeaders(caller), body: update) },
        "POST /4/broadcasts/apps/{bundleId} · A's channel": { world, caller in
            APNsFill(
                values: ["bundleId": world.app(caller)],
                headers: [("apns-channel-id", world.channel), ("apns-push-type", "liveactivity"), ("apns-expiration", "0"), ("apns-priority", "10")],
                body: update
            )
        },
        "POST /1/apps/{bundleId}/channels · —": { world, caller in
            APNsFill(values: ["bundleId": world.app(caller)], body: #"{"message-storage-policy":0,"push-type":"LiveActivity"}"#)
        },
        "GET /1/apps/{bundleId}/channels · A's channel": { world, caller in
            APNsFill(values: ["bundleId": world.app(caller)], headers: [("apns-channel-id", world.channel)])
        },
        "DELETE /1/apps/{bundleId}/channels · A's channel": { world, caller in
            APNsFill(values: ["bundleId": world.app(caller)], headers: [("apns-channel-id", world.channel)])
        },
        "GET /1/apps/{bundleId}/all-channels · —": { world, caller in APNsFill(values: ["bundleId": world.app(caller)]) },
        "POST /token · an assertion no account of this server signed": { _, _ in
            APNsFill(
                headers: [("content-type", "application/x-www-form-urlencoded")],
                body: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=e30.e30.c2ln"
            )
        },
        "POST /token · a body that is not form encoding (a raw space)": { _, _ in
            APNsFill(headers: [("content-type", "application/x-www-form-urlencoded")], body: "grant_type=a b")
        },
        "POST /v1/projects/{project}/messages:send · a message to A's registration token on pixel": { world, _ in
            APNsFill(
                values: ["project": "islet-matrix"], headers: [("content-type", "application/json")],
                body: #"{"message":{"token":"\#(world.fcmToken)","data":{"islet":"{}"}}}"#
            )
        },
    ]

    /// Sends one APNs row from every provider, and each refusal again naming made-up ones —
    /// but for Apple's own exception: a token no one holds is `BadDeviceToken`.
    private static func checkAPNs(_ row: Row, in world: World, jwt: String) async throws {
        guard let recipe = apnsRecipes[row.key] else { return }
        let secrets = try await world.secrets()
        for caller in APNsCaller.allCases {
            guard let cell = row.cells[caller.rawValue] else {
                Issue.record("\(row.key): no cell for \(caller.rawValue)")
                continue
            }
            let fill = recipe(world, caller)
            let sent = Sent(method: row.method, path: Fill(values: fill.values).path(row.request), body: fill.body)
            let headers = fill.headers
            let send = { (sent: Sent, headers: [(String, String)]) in
                try await world.b.apns.send(
                    .init(rawValue: sent.method), sent.path, headers: headers, body: sent.body.map { Data($0.utf8) },
                    providerToken: caller == .none ? nil : jwt
                )
            }
            let answer = try await send(sent, headers)
            let place = "\(row.key), \(caller.rawValue)"
            #expect(answer.status == cell.status && (cell.reason == nil || answer.reason == cell.reason), "\(place): \(answer)")
            let told = answer.body + (answer.detail ?? "")
            let named = sent.text + headers.map { $0.0 + $0.1 }.joined()
            for leak in secrets.needles(for: .otherApp) where told.contains(leak) && !named.contains(leak) {
                Issue.record("\(place): the answer holds \(leak): \(answer)")
            }
            guard answer.status >= 400, answer.reason != "DeviceTokenNotForTopic" else { continue }
            let phantoms = secrets.phantoms(world)
            let made = Sent(method: row.method, path: Fill(values: fill.values).phantom(phantoms).path(row.request), body: sent.body)
            let phantom = try await send(made, headers.map { name, value in
                (name, phantoms[value] ?? value.replacingOccurrences(of: world.a.bundleId + ".", with: phantoms[world.a.bundleId]! + "."))
            })
            #expect(
                phantom.status == answer.status && phantom.reason == answer.reason
                    && (phantom.detail ?? "").restoring(phantoms) == (answer.detail ?? ""),
                "\(place): a made-up one is answered otherwise — \(answer) / \(phantom)"
            )
        }
    }

    // MARK: The tables

    /// One row of a table: the request as written, what it names, and a cell per caller.
    struct Row {
        var request: String
        var names: String
        var cells: [String: Cell]

        var key: String { "\(request) · \(names)" }
        var method: String { String(request.split(separator: " ")[0]) }
        /// The route it reaches, as the server lists it: the request without its query.
        var route: String { String(request.split(separator: "?")[0]) }
    }

    /// A cell: the status (a WebSocket's close code) and reason a caller gets; the words after
    /// them say what the answer holds.
    struct Cell {
        var status: Int
        var reason: String?

        init(status: Int, reason: String?) {
            (self.status, self.reason) = (status, reason)
        }

        init?(_ text: String) {
            let digits = text.prefix { $0.isASCII && $0.isNumber }
            guard let status = Int(digits) else { return nil }
            self.status = status
            let rest = text.dropFirst(digits.count).drop { $0 == " " }
            reason = rest.hasPrefix("`") ? String(rest.dropFirst().prefix { $0 != "`" }) : nil
        }
    }

    /// The table under `heading` in docs/security.md, up to the next heading.
    static func table(_ heading: String) throws -> [Row] {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/security.md")
        let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n").map(String.init)
        let start = try #require(lines.firstIndex(of: heading), "docs/security.md has no \(heading)")
        let section = lines[(start + 1)...].prefix { !$0.hasPrefix("#") }
        func cells(_ line: String) -> [String] {
            line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast().map { $0.trimmingCharacters(in: .whitespaces) }
        }
        let header = try #require(section.first { $0.hasPrefix("| route |") }.map(cells), "\(heading): no table")
        return try section.filter { $0.hasPrefix("| `") }.map { line in
            let values = cells(line)
            try #require(values.count == header.count, "\(line): \(values.count) cells, not \(header.count)")
            var row = Row(request: values[0].trimmingCharacters(in: ["`"]), names: values[1], cells: [:])
            for (column, text) in zip(header.dropFirst(2), values.dropFirst(2)) {
                let cell = try #require(Cell(text), "\(row.key), \(column): \"\(text)\" starts with no status")
                row.cells[column] = cell
            }
            return row
        }
    }

    /// Runs of 16 or more hex digits: a token, at more than a keyless reader may see — but for
    /// the ids that name something and open nothing, by their prefix: a send's (`snd_…`).
    static func hexRuns(in text: String) -> [String] {
        let names = ["snd_"]
        let characters = Array(text) + [" "]
        var runs: [String] = []
        var start = 0
        for (index, character) in characters.enumerated() where !character.isHexDigit {
            if index - start >= 16 {
                let before = String(characters[max(0, start - 4)..<start])
                if !names.contains(before) { runs.append(String(characters[start..<index])) }
            }
            start = index + 1
        }
        return runs
    }
}

/// A request of a row, as sent.
struct Sent {
    var method: String
    var path: String
    var body: String?

    var text: String { path + (body ?? "") }
}

extension String {
    /// A JSON body with every string in `phantoms` made up.
    fileprivate func replacing(_ phantoms: [String: String]) -> String {
        phantoms.reduce(self) { text, entry in text.replacingOccurrences(of: "\"\(entry.key)\"", with: "\"\(entry.value)\"") }
    }

    /// The text with every made-up value put back as the real one it stood for.
    fileprivate func restoring(_ phantoms: [String: String]) -> String {
        // Longest first: "com.example.nope" before "nope".
        phantoms.sorted { $0.value.count > $1.value.count }.reduce(self) { text, entry in
            text.replacingOccurrences(of: entry.value, with: entry.key)
        }
    }
}

/// What a caller read: the status (a WebSocket's close code), the reason, the body (a close's
/// reason), and every byte as text.
struct Answer {
    var status: Int
    var reason: String?
    var body: String
    var text: String

    /// An HTTP/1.1 answer, read whole.
    init(http text: String) {
        self.text = text
        status = text.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
        // Every answer but a stream's has a Content-Length: the body is what follows the head.
        body = text.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        reason = (try? WireFormat.decoder().decode(JSONValue.self, from: Data(body.utf8)))?["error"]?["reason"]?.stringValue
    }

    init(status: Int, reason: String?, body: String, text: String) {
        (self.status, self.reason, self.body, self.text) = (status, reason, body, text)
    }
}

/// Two apps and what A holds, on a live server (docs/security.md, "Every route, by caller").
struct World: Sendable {
    let islet: Harness
    let a: Provider
    let b: Provider
    let phone2Key: String
    /// A's activity on `default`, with a push token.
    let ride: ActivityID
    let rideToken: String
    /// A's activity started on the phone through its push-to-start token; its delivery is held.
    let build: ActivityID
    let delivery: String
    /// Islet's push-to-start token of A on `default`.
    let pushToStart: String
    let channel: String
    let bRide: ActivityID
    let aOnPhone2: ActivityID
    let bOnPhone2: ActivityID
    /// The first event of `ride`'s history.
    let eventOfA: String
    /// The `next` of the admin's first page of A's activities.
    let cursorOfA: String
    /// A's FCM registration token on the Android phone `pixel`, and A's ride there.
    let fcmToken: String
    let rideOnPixel: ActivityID
    /// A's webhook endpoint (paused: it sends nothing).
    let webhook: String
    /// A's send, scheduled far ahead (it reaches nothing).
    let send: String
    /// A's client key and the installation it registered (docs/installations.md).
    let aClientKeyId: String
    let aInstallation: String
    let aInstallationCredential: String
    /// B's client key and the credential of an installation of B's: two columns of callers.
    let bClientKey: String
    let bInstallation: String
    let bInstallationCredential: String

    static let layout = #"{"lockScreen":{"type":"Text","text":"Ride"}}"#
    static let broadcast = #"{"event":"update","content":{"state":{"speed":9}}}"#

    /// A start of a ride on `default`, with `extra` fields.
    static func start(_ extra: String) -> String {
        #"{"attributesType":"RideAttributes","attributes":{"route":"Loop"},"content":{"state":{"speed":1}}\#(extra)}"#
    }

    /// A phone's token no one has registered.
    static func newToken() -> String {
        (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    /// An FCM registration token no one has registered, shaped as Google's: a Firebase
    /// installation ID, ":", and Google's part.
    static func newFCMToken() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        func random(_ count: Int) -> String { String((0..<count).map { _ in alphabet.randomElement()! }) }
        return "c" + random(21) + ":APA91b" + random(134)
    }

    /// Builds the world on a live server and runs `body` in it.
    static func with<T: Sendable>(_ islet: Harness, _ body: (World) async throws -> T) async throws -> T {
        try await islet.withProvider("com.example.a", keyId: "KEYA123456") { a in
            try await islet.withProvider("com.example.b", keyId: "KEYB123456") { b in
                let admin = islet.admin
                _ = try await islet.must(.POST, "/v1/devices", key: admin, body: #"{"id":"phone-2"}"#, 201)
                let phone2Key = try await islet.must(.POST, "/v1/devices/phone-2/key", key: admin, 201).string("key")
                // Made before A has credentials: with them, a channel is made at Apple first.
                let channel = try await islet.must(.POST, "/v1/apps/\(a.bundleId)/channels", key: a.apiKey, body: #"{"storagePolicy":0}"#, 201)
                    .string("id")
                _ = try await islet.must(.PUT, "/v1/apps/\(a.bundleId)/layouts/RideAttributes", key: a.apiKey, body: layout, 201)
                _ = try await islet.must(
                    .PUT, "/v1/apps/\(a.bundleId)/activity-types/ScoreAttributes", key: a.apiKey, body: #"{"contentState":{"home":"integer"}}"#, 200
                )
                let ride = try await islet.must(.POST, "/v1/activities", key: a.apiKey, body: start(#","pushType":"token""#), 201)
                let rideToken = try ride.string("pushToken")
                #expect(try await a.push(rideToken, Provider.update(#"{"speed":2}"#)).status == 200)
                _ = try await islet.must(.PUT, "/v1/apps/\(a.bundleId)/delivery", key: admin, body: ConsoleRouteTests.credential, 200)
                _ = try await islet.must(.PATCH, "/v1/apps/\(a.bundleId)", key: a.apiKey, body: #"{"deliveryPaused":true}"#, 200)
                _ = try await islet.must(
                    .PUT, "/v1/devices/default/push-to-start-tokens/BuildAttributes", key: a.apiKey,
                    body: #"{"token":"\#(newToken())","environment":"development"}"#, 200
                )
                let build = try await islet.must(
                    .POST, "/v1/activities", key: a.apiKey,
                    body: #"{"attributesType":"BuildAttributes","attributes":{},"content":{"state":{"step":"build"}}}"#, 201
                ).string("id")
                let deliveries = try await islet.must(.GET, "/v1/activities/\(build)/deliveries", key: admin, 200)
                let delivery = try #require(deliveries.json["deliveries"].items.first?["delivery"]?.text, "\(deliveries.text)")
                let settings = try await islet.must(.GET, "/v1/devices/default/settings?bundleId=\(a.bundleId)", key: admin, 200)
                let pushToStart = try #require(settings.json["settings"].items.first?["pushToStartToken"]?.stringValue, "\(settings.text)")
                let bRide = try await islet.must(.POST, "/v1/activities", key: b.apiKey, body: start(""), 201).string("id")
                let onPhone2 = start(#","device":"phone-2""#)
                let aOnPhone2 = try await islet.must(.POST, "/v1/activities", key: a.apiKey, body: onPhone2, 201).string("id")
                let bOnPhone2 = try await islet.must(.POST, "/v1/activities", key: b.apiKey, body: onPhone2, 201).string("id")
                let fcmToken = newFCMToken()
                _ = try await islet.must(.PUT, "/v1/devices/pixel/fcm-token", key: a.apiKey, body: #"{"token":"\#(fcmToken)"}"#, 200)
                let rideOnPixel = try await islet.must(.POST, "/v1/activities", key: a.apiKey, body: start(#","device":"pixel""#), 201).string("id")
                let webhook = try await islet.must(
                    .POST, "/v1/apps/\(a.bundleId)/webhooks", key: a.apiKey, body: #"{"url":"http://127.0.0.1:9/hook"}"#, 201
                ).string("id")
                _ = try await islet.must(.PATCH, "/v1/apps/\(a.bundleId)/webhooks/\(webhook)", key: a.apiKey, body: #"{"enabled":false}"#, 200)
                _ = try await islet.must(.PUT, "/v1/apps/\(a.bundleId)/users/fan-1", key: a.apiKey, body: #"{"devices":["default"],"tags":{"team":"a"}}"#, 201)
                let send = try await islet.must(
                    .POST, "/v1/apps/\(a.bundleId)/sends", key: a.apiKey, body: #"{"action":"end","key":"k","audience":"all","at":4102444800}"#, 202
                ).string("id")
                let aClient = try await islet.must(.POST, "/v1/apps/\(a.bundleId)/client-keys", key: a.apiKey, body: #"{"name":"A's app"}"#, 201)
                let aInstalled = try await islet.must(
                    .POST, "/v1/installations", key: try aClient.string("key"), body: #"{"bundleId":"\#(a.bundleId)","platform":"ios"}"#, 201
                )
                let bClient = try await islet.must(.POST, "/v1/apps/\(b.bundleId)/client-keys", key: b.apiKey, body: #"{"name":"B's app"}"#, 201)
                let bClientKey = try bClient.string("key")
                let bInstalled = try await islet.must(
                    .POST, "/v1/installations", key: bClientKey, body: #"{"bundleId":"\#(b.bundleId)","platform":"ios"}"#, 201
                )
                let history = try await islet.must(.GET, "/v1/activities/\(try ride.string("id"))/events", key: admin, 200)
                let listing = try await islet.must(.GET, "/v1/activities?bundleId=\(a.bundleId)&limit=1", key: admin, 200)
                return try await body(World(
                    islet: islet, a: a, b: b, phone2Key: phone2Key, ride: try ride.string("id"), rideToken: rideToken, build: build,
                    delivery: delivery, pushToStart: pushToStart, channel: channel, bRide: bRide, aOnPhone2: aOnPhone2,
                    bOnPhone2: bOnPhone2, eventOfA: try #require(history.json["events"].items.first?["id"]?.text),
                    cursorOfA: try listing.string("next"), fcmToken: fcmToken, rideOnPixel: rideOnPixel, webhook: webhook, send: send,
                    aClientKeyId: try #require(aClient.json["clientKey"]?["id"]?.stringValue),
                    aInstallation: try #require(aInstalled.json["installation"]?["id"]?.stringValue),
                    aInstallationCredential: try aInstalled.string("credential"), bClientKey: bClientKey,
                    bInstallation: try #require(bInstalled.json["installation"]?["id"]?.stringValue),
                    bInstallationCredential: try bInstalled.string("credential")
                ))
            }
        }
    }

    /// A row's fill: A's app, channel, key id, layout's type and event, and the admin's cursor,
    /// with `values` given over them.
    func fill(_ values: [String: String] = [:], body: String? = nil, marker: (@Sendable () async throws -> String)? = nil) -> RouteMatrixTests.Fill {
        let common = [
            "bundleId": a.bundleId, "channelId": channel, "keyId": "KEYA123456", "attributesType": "RideAttributes",
            "name": "ScoreAttributes", "key": "ride-key", "file": "display.js", "eventId": eventOfA, "cursor": cursorOfA,
        ]
        return RouteMatrixTests.Fill(values: common.merging(values) { $1 }, body: body, marker: marker)
    }

    /// A new ride of A's on `default`, with a push token: for a row that changes one.
    func freshRide() async throws -> ActivityID {
        try await islet.must(.POST, "/v1/activities", key: a.apiKey, body: Self.start(#","pushType":"token""#), 201).string("id")
    }

    /// Updates an activity with a value no one has seen, and returns the value: the event every
    /// reader of the activity gets next.
    func mark(_ id: ActivityID, key: String) async throws -> String {
        let marker = UUID().uuidString
        _ = try await islet.must(.POST, "/v1/activities/\(id)/update", key: key, body: #"{"content":{"state":{"speed":1,"marker":"\#(marker)"}}}"#, 200)
        return marker
    }

    /// The app a caller of the APNs port names: A, unless it names its own.
    func app(_ caller: RouteMatrixTests.APNsCaller) -> String {
        caller == .ownApp ? b.bundleId : a.bundleId
    }

    /// A push's headers, with the topic of the app the caller names.
    func pushHeaders(_ caller: RouteMatrixTests.APNsCaller) -> [(String, String)] {
        [("apns-topic", app(caller) + ".push-type.liveactivity"), ("apns-push-type", "liveactivity")]
    }

    /// Whether a request or path is a WebSocket's: the event stream's, or a listening session's.
    static func isWebSocket(_ path: String) -> Bool {
        path.contains("/v1/events/ws") || path.contains("/webhooks/listen")
    }

    /// Sends a request as `caller`, over a raw connection with exactly these headers. An event
    /// stream that is served is read until `marker`'s event arrives; a WebSocket refused, up to
    /// its close frame.
    func send(
        _ sent: Sent, as caller: RouteMatrixTests.Caller, expecting cell: RouteMatrixTests.Cell,
        marker: (@Sendable () async throws -> String)?
    ) async throws -> Answer {
        var path = sent.path
        var headers: [String] = []
        let webSocket = Self.isWebSocket(path)
        let stream = path.hasPrefix("/v1/events") || webSocket
        switch caller {
        case .proxy: headers.append("X-Forwarded-For: 203.0.113.7")
        case .otherApp, .otherDevice, .clientKey, .installation:
            let key = [.otherApp: b.apiKey, .otherDevice: phone2Key, .clientKey: bClientKey, .installation: bInstallationCredential][caller]!
            // The event streams take their key as a browser sends it; a listening session, in its header.
            if path.hasPrefix("/v1/events") {
                path += (path.contains("?") ? "&" : "?") + "key=\(key)"
            } else {
                headers.append("Authorization: Bearer \(key)")
            }
        case .keyless: break
        }
        var head = "\(sent.method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(islet.port)\r\n"
        head += webSocket
            ? "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            : "Connection: close\r\n"
        for header in headers { head += header + "\r\n" }
        let body = sent.body ?? (sent.method == "GET" ? nil : "{}")
        if let body { head += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n" }
        let bytes = Array((head + "\r\n" + (body ?? "")).utf8)
        guard stream else { return Answer(http: try await RawHTTP.exchange(port: islet.port, bytes: bytes)) }

        let socket = try RawSocket(port: islet.port)
        socket.send(bytes)
        let blank = Array("\r\n\r\n".utf8)
        var read = await offThePool { socket.read(seconds: 20) { $0.firstRange(of: blank) != nil } }.bytes
        let headEnd = read.firstRange(of: blank)?.upperBound ?? read.count
        let status = String(decoding: read, as: UTF8.self).split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
        guard status == 200 || status == 101 else {
            read += await offThePool { socket.read(seconds: 20) { _ in false } }.bytes
            return Answer(http: String(decoding: read, as: UTF8.self))
        }
        let awaited = cell.status == status ? try await marker?() : nil
        if cell.status == status, awaited == nil { Issue.record("\(path): a stream that is served needs a marker") }
        let before = read
        read += await offThePool {
            socket.read(seconds: 20) { more in
                let all = before + more
                return awaited.map { all.firstRange(of: Array($0.utf8)) != nil } == true || Self.closeFrame(in: all, after: headEnd) != nil
            }
        }.bytes
        let text = String(decoding: read, as: UTF8.self)
        if webSocket, let (code, reason) = Self.closeFrame(in: read, after: headEnd) {
            return Answer(status: code, reason: reason.split(separator: ":").first.map(String.init), body: reason, text: text)
        }
        if let awaited, !text.contains(awaited) {
            Issue.record("\(path): the stream never carried the event it was read up to: \(text.prefix(600))")
        }
        return Answer(status: status, reason: nil, body: String(decoding: read[headEnd...], as: UTF8.self), text: text)
    }

    /// The close frame that follows a WebSocket's handshake, once it has arrived whole.
    private static func closeFrame(in bytes: [UInt8], after head: Int) -> (code: Int, reason: String)? {
        guard bytes.count >= head + 4, bytes[head] == 0x88 else { return nil }
        let length = Int(bytes[head + 1] & 0x7F)
        guard bytes.count >= head + 2 + length else { return nil }
        let code = Int(bytes[head + 2]) << 8 | Int(bytes[head + 3])
        return (code, String(decoding: bytes[(head + 4)..<(head + 2 + length)], as: UTF8.self))
    }

    /// Every token, activity, channel and key id on the server, as the admin reads them.
    func secrets() async throws -> Secrets {
        let admin = islet.admin
        var secrets = Secrets(a: a.bundleId)
        for activity in try await islet.must(.GET, "/v1/activities?limit=1000", key: admin, 200).json["activities"].items {
            let (app, device) = (activity["bundleId"]?.stringValue ?? "", activity["device"]?.stringValue ?? "")
            secrets.add(.activity, activity["id"]?.stringValue, app: app, device: device)
            secrets.add(.token, activity["pushToken"]?.stringValue, app: app, device: device)
        }
        for device in ["default", "phone-2", "pixel", aInstallation, bInstallation] {
            for entry in try await islet.must(.GET, "/v1/devices/\(device)/settings", key: admin, 200).json["settings"].items {
                for field in ["pushToStartToken", "fcmToken"] {
                    secrets.add(.token, entry[field]?.stringValue, app: entry["bundleId"]?.stringValue ?? "", device: device)
                }
            }
            for token in try await islet.must(.GET, "/v1/devices/\(device)", key: admin, 200).json["tokens"].items {
                secrets.add(.token, token["token"]?.stringValue, app: token["bundleId"]?.stringValue ?? "", device: device)
            }
        }
        secrets.bInstallation = bInstallation
        secrets.add(.id, aInstallation, app: a.bundleId, device: aInstallation)
        secrets.add(.id, aClientKeyId, app: a.bundleId, device: nil)
        for app in [a.bundleId, b.bundleId] {
            for channel in try await islet.must(.GET, "/v1/apps/\(app)/channels", key: admin, 200).json["channels"].items {
                secrets.add(.channel, channel["id"]?.stringValue, app: app, device: nil)
            }
            for key in try await islet.must(.GET, "/v1/apps/\(app)/keys", key: admin, 200).json["keys"].items {
                secrets.add(.keyId, key["keyId"]?.stringValue, app: app, device: nil)
            }
        }
        return secrets
    }

    /// After every row: nothing of A's that a refusal reached has changed.
    func expectNothingOfAChanged() async throws {
        let admin = islet.admin
        let current = try await islet.must(.GET, "/v1/activities/\(ride)", key: admin, 200)
        #expect(current.json["activityState"] == "active" && current.json["content"]?["state"] == ["speed": 2], "\(current.text)")
        #expect(current.json["pushToken"]?.stringValue == rideToken)
        let channels = try await islet.must(.GET, "/v1/apps/\(a.bundleId)/channels", key: admin, 200)
        #expect(channels.json["channels"].items.map { $0["id"]?.stringValue } == [channel], "\(channels.text)")
        let keys = try await islet.must(.GET, "/v1/apps/\(a.bundleId)/keys", key: a.apiKey, 200)
        #expect(keys.json["keys"].items.map { $0["keyId"]?.stringValue } == ["KEYA123456"], "\(keys.text)")
        _ = try await islet.must(.GET, "/v1/apps/\(a.bundleId)/layouts/RideAttributes", key: a.apiKey, 200)
        _ = try await islet.must(.GET, "/v1/apps/\(a.bundleId)/delivery", key: a.apiKey, 200)
        let apps = try await islet.must(.GET, "/v1/apps", key: admin, 200).json["apps"].items.compactMap { $0["bundleId"]?.stringValue }
        #expect(apps == [a.bundleId, b.bundleId], "no app was made")
        let devices = try await islet.must(.GET, "/v1/devices?limit=1000", key: admin, 200).json["devices"].items.compactMap { $0["id"]?.stringValue }
        #expect(Set(devices) == ["default", "phone-2", "pixel", aInstallation, bInstallation], "no device was made")
        // A's installation still reports, its client key still registers (none was revoked).
        _ = try await islet.must(.GET, "/v1/installations/self", key: aInstallationCredential, 200)
        let clientKeys = try await islet.must(.GET, "/v1/apps/\(a.bundleId)/client-keys", key: a.apiKey, 200).json["clientKeys"].items
        #expect(clientKeys.map { $0["id"]?.stringValue } == [aClientKeyId] && clientKeys.first?["revokedAt"] == nil, "A's client key is A's: \(clientKeys)")
        let pixel = try await islet.must(.GET, "/v1/devices/pixel", key: admin, 200)
        let held = pixel.json["tokens"].items.filter { $0["retiredAt"] == nil }
        #expect(held.map { $0["token"]?.stringValue } == [fcmToken] && held.first?["bundleId"]?.stringValue == a.bundleId, "A's registration token is still A's: \(pixel.text)")
    }
}

/// What the server holds that a caller may not see, and the made-up ones a refusal is compared with.
struct Secrets {
    enum Kind { case activity, token, channel, keyId, id }

    struct Secret {
        var kind: Kind
        var value: String
        var app: String
        var device: String? = nil

        /// What may not be shown: a whole id; of a token or channel id, 9 characters from its start
        /// or its last 8 (which a key holder's text shows: `PhoneToken.shorten`).
        var needles: [String] { kind == .token || kind == .channel ? [String(value.prefix(9)), String(value.suffix(8))] : [value] }
    }

    /// App A.
    let a: String
    /// The device of B's installation: its own.
    var bInstallation = ""
    var all: [Secret] = []

    init(a: String) {
        self.a = a
    }

    mutating func add(_ kind: Kind, _ value: String?, app: String, device: String?) {
        guard let value, !value.isEmpty else { return }
        all.append(Secret(kind: kind, value: value, app: app, device: device))
    }

    /// What no answer to `caller` may hold, beyond what it sent: without a key, more than 8
    /// characters of any token or channel id; to B, anything of A's, its name too; to phone-2's key, another
    /// device's activities and tokens.
    func needles(for caller: RouteMatrixTests.Caller) -> [String] {
        let shown: [Secret] =
            switch caller {
            case .proxy, .keyless: all.filter { $0.kind == .token || $0.kind == .channel }
            case .otherApp, .clientKey: all.filter { $0.app == a } + [Secret(kind: .activity, value: a, app: a)]
            case .otherDevice: all.filter { ($0.kind == .activity || $0.kind == .token) && $0.device != "phone-2" }
            // An installation of B's: nothing of A's, nor of any device but its own.
            case .installation:
                all.filter { $0.app == a || (($0.kind == .activity || $0.kind == .token) && $0.device != bInstallation) }
                    + [Secret(kind: .activity, value: a, app: a)]
            }
        return shown.flatMap(\.needles)
    }

    /// A made-up stand-in for each of A's things a path or body can name.
    func phantoms(_ world: World) -> [String: String] {
        var phantoms = [a: "com.example.nope", "default": "nope"]
        phantoms[world.delivery] = "987654"
        phantoms[world.eventOfA] = "987653"
        for secret in all where secret.app == a {
            switch secret.kind {
            case .activity: phantoms[secret.value] = UUID().uuidString
            case .token: phantoms[secret.value] = secret.value.contains(":") ? World.newFCMToken() : World.newToken()
            case .channel: phantoms[secret.value] = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
                .replacingOccurrences(of: "/", with: "A").replacingOccurrences(of: "+", with: "B")
            case .keyId: phantoms[secret.value] = "NOPE" + secret.value.dropFirst(4)
            case .id: phantoms[secret.value] = secret.value.prefix { $0 != "_" } + "_" + String((0..<26).map { _ in "abcdefghijklmnopqrstuvwxyz234567".randomElement()! })
            }
        }
        return phantoms
    }
}

extension Harness {
    /// Sends a request of the world's making; it must get `status`.
    func must(_ method: HTTPMethod, _ path: String, key: String?, body: String? = nil, _ status: Int) async throws -> Reply {
        let reply = try await request(method, path, key: key, body: body)
        try #require(reply.status == status, "\(method) \(path): \(reply.text.prefix(600))")
        return reply
    }
}

extension Reply {
    /// A string field of the reply's object.
    func string(_ name: String) throws -> String {
        try #require(json[name]?.stringValue, "no \(name) in \(text.prefix(600))")
    }
}

extension JSONValue {
    /// A string or a whole number, as text.
    var text: String? {
        switch self {
        case .string(let text): text
        case .integer(let number): String(number)
        default: nil
        }
    }
}
