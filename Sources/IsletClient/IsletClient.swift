import AsyncHTTPClient
import Foundation
import IsletCore
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// A client for an Islet server's REST API and event stream: what the `islet` CLI, the tests
/// and (later) the Swift SDK use.
public struct IsletClient: Sendable {
    /// The server's base URL, such as `http://127.0.0.1:8080`.
    public let server: String
    /// The API key sent as a bearer token.
    public let key: String?
    private let http: HTTPClient
    private let timeout: TimeAmount
    private let logger: Logger?

    /// Creates a client.
    /// - Parameters:
    ///   - server: The server's base URL.
    ///   - key: An app key or the admin key.
    ///   - http: The HTTP client to use.
    ///   - timeout: How long one request may take.
    ///   - logger: Where the HTTP client says what it does with each request — the connection it
    ///     took, what it read — at `trace` (async-http-client's own request log); none by default.
    public init(server: String, key: String?, http: HTTPClient = .shared, timeout: TimeAmount = .seconds(30), logger: Logger? = nil) {
        self.server = server.hasSuffix("/") ? String(server.dropLast()) : server
        self.key = key
        self.http = http
        self.timeout = timeout
        self.logger = logger
    }

    // MARK: Apps and devices

    /// Creates an app (admin key).
    public func createApp(bundleId: BundleID, name: String? = nil) async throws -> CreatedApp {
        try await send(.POST, "/v1/apps", body: CreateAppBody(bundleId: bundleId, name: name), expect: CreatedApp.self)
    }

    /// A new API key for an app, replacing its earlier one at once (admin key): for a lost key.
    public func issueAppKey(bundleId: BundleID) async throws -> CreatedApp {
        try await send(.POST, "/v1/apps/\(escaped(bundleId))/key", expect: CreatedApp.self)
    }

    /// The apps the key may see.
    public func apps() async throws -> [App] {
        try await every("/v1/apps", App.self)
    }

    /// Creates a device (admin key).
    public func createDevice(id: DeviceID, name: String? = nil, platform: DevicePlatform? = nil) async throws -> Device {
        try await send(.POST, "/v1/devices", body: CreateDeviceBody(id: id, name: name, platform: platform), expect: Device.self)
    }

    /// Issues a device's display key (admin key).
    public func issueDeviceKey(device: DeviceID) async throws -> IssuedDeviceKey {
        try await send(.POST, "/v1/devices/\(escaped(device))/key", expect: IssuedDeviceKey.self)
    }

    /// The address of a device's web display; with `key`, one that carries it (in the fragment,
    /// which browsers do not send to the server; the page keeps it).
    public func displayURL(device: DeviceID, key: String? = nil) -> String {
        let path = device == DeviceID.defaultDevice ? "/" : "/devices/\(escaped(device))"
        return server + path + (key.map { "#key=\($0)" } ?? "")
    }

    /// Every device.
    public func devices() async throws -> [Device] {
        try await every("/v1/devices", Device.self)
    }

    /// A device's settings for the apps the key may see.
    public func settings(device: DeviceID) async throws -> [AppSettings] {
        try await send(.GET, settingsPath(device), expect: Listing<AppSettings>.self).items
    }

    /// `settings(device:)`, blocking the calling thread (see `sendBlocking`).
    public func settingsBlocking(device: DeviceID) throws -> [AppSettings] {
        try sendBlocking(.GET, settingsPath(device), expect: Listing<AppSettings>.self).items
    }

    private func settingsPath(_ device: DeviceID) -> String {
        "/v1/devices/\(escaped(device))/settings"
    }

    /// Changes a device's settings for an app (admin key).
    public func updateSettings(
        device: DeviceID, bundleId: BundleID, activitiesEnabled: Bool? = nil, frequentUpdates: Bool? = nil, fcmInstallationIdEnabled: Bool? = nil
    ) async throws -> AppSettings {
        let body = SettingsBody(
            bundleId: bundleId, activitiesEnabled: activitiesEnabled, frequentUpdates: frequentUpdates, fcmInstallationIdEnabled: fcmInstallationIdEnabled
        )
        return try await send(.PUT, "/v1/devices/\(escaped(device))/settings", body: body, expect: AppSettings.self)
    }

    /// Registers a provider's public key (ES256) for an app's APNs-style JWTs.
    public func addProviderKey(
        bundleId: BundleID, keyId: String, teamId: String, publicKey: String, kind: KeyScope? = nil, environment: APNsEnvironment? = nil
    ) async throws -> ProviderKey {
        let body = ProviderKeyBody(keyId: keyId, teamId: teamId, publicKey: publicKey, kind: kind, environment: environment)
        return try await send(.POST, "/v1/apps/\(escaped(bundleId))/keys", body: body, expect: ProviderKey.self)
    }

    /// Removes a provider key: tokens it signs are refused from now on.
    public func deleteProviderKey(bundleId: BundleID, keyId: String) async throws {
        _ = try await send(.DELETE, "/v1/apps/\(escaped(bundleId))/keys/\(escaped(keyId))", expect: NoContent.self)
    }

    /// Turns strict pushes on or off for an app.
    public func setStrictPushes(_ strict: Bool, bundleId: BundleID) async throws -> App {
        try await updateApp(bundleId, UpdateAppBody(strictPushes: strict))
    }

    /// Changes an app's switches, those given: strict pushes, delivery paused.
    public func updateApp(_ bundleId: BundleID, _ body: UpdateAppBody) async throws -> App {
        try await send(.PATCH, "/v1/apps/\(escaped(bundleId))", body: body, expect: App.self)
    }

    /// Registers an activity type's shapes (see `Shape` for the compact form).
    public func putActivityType(bundleId: BundleID, name: String, attributes: JSONValue?, contentState: JSONValue?) async throws
        -> ActivityType
    {
        try await send(
            .PUT, "/v1/apps/\(escaped(bundleId))/activity-types/\(escaped(name))",
            body: ActivityTypeBody(attributes: attributes, contentState: contentState), expect: ActivityType.self
        )
    }

    /// Creates a broadcast channel through the REST API.
    public func createChannel(bundleId: BundleID, storagePolicy: Int, environment: APNsEnvironment? = nil) async throws -> BroadcastChannel {
        try await send(
            .POST, "/v1/apps/\(escaped(bundleId))/channels", body: CreateChannelBody(storagePolicy: storagePolicy, environment: environment),
            expect: BroadcastChannel.self
        )
    }

    /// An app's broadcast channels, oldest first.
    public func channels(bundleId: BundleID) async throws -> [BroadcastChannel] {
        try await every("/v1/apps/\(escaped(bundleId))/channels", BroadcastChannel.self)
    }

    /// Deletes a broadcast channel (at Apple too, when it was made there).
    public func deleteChannel(bundleId: BundleID, id: String) async throws {
        _ = try await send(.DELETE, "/v1/apps/\(escaped(bundleId))/channels/\(escaped(id))", expect: NoContent.self)
    }

    /// Broadcasts an update or an end to every activity joined to a channel (and, for a
    /// channel made at Apple, to every phone joined to it); returns the activities here it changed.
    public func broadcast(bundleId: BundleID, channelId: String, _ body: BroadcastBody) async throws -> [Activity] {
        try await send(
            .POST, "/v1/apps/\(escaped(bundleId))/channels/\(escaped(channelId))/broadcast", body: body, expect: Listing<Activity>.self
        ).items
    }

    // MARK: Users and sends (docs/audiences.md)

    /// Writes one of an app's users whole: their phones and tags.
    public func putUser(bundleId: BundleID, externalId: String, _ body: PutAppUserBody) async throws -> AppUser {
        try await send(.PUT, "/v1/apps/\(escaped(bundleId))/users/\(escaped(externalId))", body: body, expect: AppUser.self)
    }

    /// One of an app's users.
    public func user(bundleId: BundleID, externalId: String) async throws -> AppUser {
        try await send(.GET, "/v1/apps/\(escaped(bundleId))/users/\(escaped(externalId))", expect: AppUser.self)
    }

    /// Every one of an app's users carrying all of `tags`, in `externalId` order.
    public func users(bundleId: BundleID, tags: [String: String] = [:]) async throws -> [AppUser] {
        let query = tags.sorted { $0.key < $1.key }.map { "tag=" + escaped("\($0.key):\($0.value)") }.joined(separator: "&")
        return try await every("/v1/apps/\(escaped(bundleId))/users" + (query.isEmpty ? "" : "?" + query), AppUser.self)
    }

    /// Forgets one of an app's users and their tags.
    public func deleteUser(bundleId: BundleID, externalId: String) async throws {
        _ = try await send(.DELETE, "/v1/apps/\(escaped(bundleId))/users/\(escaped(externalId))", expect: NoContent.self)
    }

    /// Starts, updates or ends an activity on every phone of an audience, now or at `at`: the
    /// answer comes at once, and the send runs in the background.
    public func createSend(bundleId: BundleID, _ body: SendBody) async throws -> Send {
        try await send(.POST, sendsPath(bundleId), body: body, expect: Send.self)
    }

    /// One send and its counts.
    public func send(bundleId: BundleID, id: String) async throws -> Send {
        try await send(.GET, sendsPath(bundleId, id), expect: Send.self)
    }

    /// Every send of an app, in the order they were made.
    public func sends(bundleId: BundleID) async throws -> [Send] {
        try await every(sendsPath(bundleId), Send.self)
    }

    /// Cancels a send (a running one stops after its current batch).
    public func cancelSend(bundleId: BundleID, id: String) async throws -> Send {
        try await send(.DELETE, sendsPath(bundleId, id), expect: Send.self)
    }

    /// Moves a scheduled send to another time.
    public func moveSend(bundleId: BundleID, id: String, to at: Date) async throws -> Send {
        try await send(.PATCH, sendsPath(bundleId, id), body: MoveSendBody(at: at), expect: Send.self)
    }

    /// A send's phones and what it did on each; only those with `outcome` when given.
    public func sendTargets(bundleId: BundleID, id: String, outcome: SendTargetOutcome? = nil) async throws -> [SendTarget] {
        try await every(sendsPath(bundleId, id) + "/targets" + (outcome.map { "?outcome=\($0.rawValue)" } ?? ""), SendTarget.self)
    }

    private func sendsPath(_ bundleId: BundleID, _ id: String? = nil) -> String {
        "/v1/apps/\(escaped(bundleId))/sends" + (id.map { "/\(escaped($0))" } ?? "")
    }

    // MARK: Webhooks

    /// Adds a webhook endpoint to an app; the answer holds its secret, which no later answer does.
    public func createWebhook(bundleId: BundleID, _ body: CreateWebhookBody) async throws -> WebhookEndpointView {
        try await send(.POST, webhooksPath(bundleId), body: body, expect: WebhookEndpointView.self)
    }

    /// An app's webhook endpoints, oldest first.
    public func webhooks(bundleId: BundleID) async throws -> [WebhookEndpointView] {
        try await send(.GET, webhooksPath(bundleId), expect: Listing<WebhookEndpointView>.self).items
    }

    /// One webhook endpoint: where it has got to, and what is failing.
    public func webhook(bundleId: BundleID, id: String) async throws -> WebhookEndpointView {
        try await send(.GET, webhooksPath(bundleId, id), expect: WebhookEndpointView.self)
    }

    /// Changes an endpoint's address, events, description, or whether it is enabled.
    public func updateWebhook(bundleId: BundleID, id: String, _ body: UpdateWebhookBody) async throws -> WebhookEndpointView {
        try await send(.PATCH, webhooksPath(bundleId, id), body: body, expect: WebhookEndpointView.self)
    }

    /// Removes an endpoint and its attempt log.
    public func deleteWebhook(bundleId: BundleID, id: String) async throws {
        _ = try await send(.DELETE, webhooksPath(bundleId, id), expect: NoContent.self)
    }

    /// Gives an endpoint a new secret; the old one keeps signing beside it for `keepPreviousFor` seconds.
    public func rotateWebhookSecret(bundleId: BundleID, id: String, keepPreviousFor: Double? = nil) async throws -> WebhookEndpointView {
        try await send(
            .POST, webhooksPath(bundleId, id) + "/rotate-secret", body: RotateWebhookSecretBody(keepPreviousFor: keepPreviousFor),
            expect: WebhookEndpointView.self
        )
    }

    /// Sends a `webhook.test` event to an endpoint at once and answers how it went.
    public func testWebhook(bundleId: BundleID, id: String) async throws -> WebhookAttempt {
        try await send(.POST, webhooksPath(bundleId, id) + "/test", expect: WebhookAttempt.self)
    }

    /// Sends an endpoint its events again, from an event (`evt_…`) or a time.
    public func replayWebhook(bundleId: BundleID, id: String, since: String) async throws -> WebhookEndpointView {
        try await send(.POST, webhooksPath(bundleId, id) + "/replay", body: ReplayWebhookBody(since: since), expect: WebhookEndpointView.self)
    }

    /// An endpoint's latest attempts, newest first; only its dead letters with `failedOnly`.
    public func webhookAttempts(bundleId: BundleID, id: String, limit: Int = 100, failedOnly: Bool = false) async throws -> [WebhookAttempt] {
        let query = queryString([("limit", String(limit))] + (failedOnly ? [("failed", "true")] : []))
        return try await send(.GET, webhooksPath(bundleId, id) + "/attempts" + query, expect: Listing<WebhookAttempt>.self).items
    }

    private func webhooksPath(_ bundleId: BundleID, _ id: String? = nil) -> String {
        "/v1/apps/\(escaped(bundleId))/webhooks" + (id.map { "/\(escaped($0))" } ?? "")
    }

    /// Gives a device a new push-to-start token for an app (admin key); the old one answers 410.
    public func rotatePushToStartToken(device: DeviceID, bundleId: BundleID) async throws -> AppSettings {
        try await send(
            .POST, "/v1/devices/\(escaped(device))/apps/\(escaped(bundleId))/rotate-push-to-start-token", expect: AppSettings.self
        )
    }

    /// Gives an activity a new push token (admin key).
    public func rotatePushToken(_ id: ActivityID) async throws -> Activity {
        try await send(.POST, "/v1/activities/\(escaped(id))/rotate-push-token", expect: Activity.self)
    }

    // MARK: Activities

    /// Starts an activity; with the admin key, `bundleId` names the app.
    public func start(_ request: ActivityRequest, bundleId: BundleID? = nil) async throws -> Activity {
        try await startWarned(request, bundleId: bundleId).value
    }

    /// `start`, with the server's warnings (a renewing activity its phone cannot renew).
    public func startWarned(_ request: ActivityRequest, bundleId: BundleID? = nil) async throws -> Warned<Activity> {
        try await send(.POST, "/v1/activities", body: StartActivityBody(request: request, bundleId: bundleId), expect: Warned<Activity>.self)
    }

    /// `start`, blocking the calling thread (see `sendBlocking`): for ActivityKit's synchronous
    /// `request`.
    public func startBlocking(_ request: ActivityRequest, bundleId: BundleID? = nil) throws -> Activity {
        try sendBlocking(.POST, "/v1/activities", body: StartActivityBody(request: request, bundleId: bundleId), expect: Activity.self)
    }

    /// Starts an activity under a stable key, or updates (and with `end`, ends) the live one.
    public func startOrUpdate(
        key stableKey: String, _ request: ActivityRequest, bundleId: BundleID? = nil, timestamp: Date? = nil,
        end: DismissalPolicy? = nil
    ) async throws -> Activity {
        try await startOrUpdateWarned(key: stableKey, request, bundleId: bundleId, timestamp: timestamp, end: end).value
    }

    /// `startOrUpdate`, with the server's warnings.
    public func startOrUpdateWarned(
        key stableKey: String, _ request: ActivityRequest, bundleId: BundleID? = nil, timestamp: Date? = nil,
        end: DismissalPolicy? = nil
    ) async throws -> Warned<Activity> {
        let body = StartOrUpdateBody(request: request, bundleId: bundleId, timestamp: timestamp, end: end)
        return try await send(.PUT, "/v1/activities/by-key/\(escaped(stableKey))", body: body, expect: Warned<Activity>.self)
    }

    /// Updates an activity's content.
    public func update(_ id: ActivityID, _ update: ContentUpdate) async throws -> Activity {
        try await send(.POST, "/v1/activities/\(escaped(id))/update", body: update, expect: Activity.self)
    }

    /// Ends an activity.
    public func end(_ id: ActivityID, _ end: EndRequest = EndRequest()) async throws -> Activity {
        try await send(.POST, "/v1/activities/\(escaped(id))/end", body: end, expect: Activity.self)
    }

    /// Starts an activity at `at`, on the server: the start is kept as a send, which the sends'
    /// calls follow, move and cancel (docs/audiences.md, "A single call at a time").
    public func start(_ request: ActivityRequest, bundleId: BundleID? = nil, at: Date) async throws -> Send {
        try await send(.POST, "/v1/activities", body: Scheduled(body: StartActivityBody(request: request, bundleId: bundleId), at: at), expect: Send.self)
    }

    /// Updates an activity's content at `at`, kept as a send until then.
    public func update(_ id: ActivityID, _ update: ContentUpdate, at: Date) async throws -> Send {
        try await send(.POST, "/v1/activities/\(escaped(id))/update", body: Scheduled(body: update, at: at), expect: Send.self)
    }

    /// Ends an activity at `at`, kept as a send until then.
    public func end(_ id: ActivityID, _ end: EndRequest = EndRequest(), at: Date) async throws -> Send {
        try await send(.POST, "/v1/activities/\(escaped(id))/end", body: Scheduled(body: end, at: at), expect: Send.self)
    }

    /// A single call's body with its `at` beside its fields.
    private struct Scheduled<Body: Encodable>: Encodable {
        let body: Body
        let at: Date

        private enum Keys: String, CodingKey { case at }

        func encode(to encoder: any Encoder) throws {
            try body.encode(to: encoder)
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(at, forKey: .at)
        }
    }

    /// Dismisses an activity as a person would from a display (admin key).
    public func dismiss(_ id: ActivityID) async throws -> Activity {
        try await send(.POST, "/v1/activities/\(escaped(id))/dismiss", expect: Activity.self)
    }

    /// A real phone's report of what ActivityKit told its app (`POST /v1/activities/{id}/phone-report`).
    public func report(_ state: PhoneReportState, on id: ActivityID) async throws -> Activity {
        try await send(.POST, "/v1/activities/\(escaped(id))/phone-report", body: PhoneReportBody(state: state), expect: Activity.self)
    }

    /// One activity.
    public func activity(_ id: ActivityID) async throws -> Activity {
        try await send(.GET, "/v1/activities/\(escaped(id))", expect: Activity.self)
    }

    /// "Why isn't it showing?": what the phone last acknowledged, what waits, the budget, the
    /// renewal and the last refusal (for an id of a chain, its live activity's).
    public func status(_ id: ActivityID) async throws -> ActivityStatus {
        try await send(.GET, "/v1/activities/\(escaped(id))/status", expect: ActivityStatus.self)
    }

    /// An activity's presentations, drawn by the server from its type's layout: as they stand,
    /// or as they stood just after one of its events.
    public func presentation(_ id: ActivityID, at event: EventID? = nil) async throws -> Presentation {
        let at = event.map { "?at=\($0)" } ?? ""
        return try await send(.GET, "/v1/activities/\(escaped(id))/presentation\(at)", expect: Presentation.self)
    }

    /// Registers or replaces the layout of an app's activity type.
    public func putLayout(bundleId: BundleID, attributesType: String, _ layout: JSONValue) async throws -> LayoutRecord {
        try await send(.PUT, "/v1/apps/\(escaped(bundleId))/layouts/\(escaped(attributesType))", body: layout, expect: LayoutRecord.self)
    }

    /// The layout of an app's activity type.
    public func layout(bundleId: BundleID, attributesType: String) async throws -> LayoutRecord {
        try await send(.GET, "/v1/apps/\(escaped(bundleId))/layouts/\(escaped(attributesType))", expect: LayoutRecord.self)
    }

    /// The first page of the activities a filter selects (at most `filter.limit`), in the order
    /// a device shows them.
    public func activities(_ filter: ActivityFilter = ActivityFilter()) async throws -> [Activity] {
        try await activityPage(filter).items
    }

    /// A page of the activities a filter selects: `next` passed back as `cursor` gives the next.
    public func activityPage(_ filter: ActivityFilter = ActivityFilter(), cursor: String? = nil) async throws -> Page<Activity> {
        let listing = try await send(.GET, activitiesPath(filter, cursor: cursor), expect: Listing<Activity>.self)
        return Page(items: listing.items, next: listing.next)
    }

    /// `activities`, blocking the calling thread (see `sendBlocking`): for ActivityKit's
    /// synchronous `Activity.activities`.
    public func activitiesBlocking(_ filter: ActivityFilter = ActivityFilter()) throws -> [Activity] {
        try sendBlocking(.GET, activitiesPath(filter), expect: Listing<Activity>.self).items
    }

    private func activitiesPath(_ filter: ActivityFilter, cursor: String? = nil) -> String {
        var query: [(String, String)] = [("limit", "\(filter.limit)")]
        if let cursor { query.append(("cursor", cursor)) }
        if let text = filter.query { query.append(("q", text)) }
        if let since = filter.updatedSince { query.append(("updatedSince", "\(since.timeIntervalSince1970)")) }
        if let bundleId = filter.bundleId { query.append(("bundleId", bundleId)) }
        if let deviceId = filter.deviceId { query.append(("device", deviceId)) }
        if let type = filter.attributesType { query.append(("type", type)) }
        if let states = filter.states { query.append(("state", states.sorted().map(\.rawValue).joined(separator: ","))) }
        return "/v1/activities" + queryString(query)
    }

    /// An activity's history, with the reason for every ignored update.
    public func history(_ id: ActivityID) async throws -> [Event] {
        try await every("/v1/activities/\(escaped(id))/events", Event.self)
    }

    // MARK: Delivery to real phones

    /// Registers (or replaces) an app's Apple credentials for one environment (admin key).
    public func putDeliveryCredential(bundleId: BundleID, _ body: DeliveryCredentialBody) async throws -> DeliveryCredential {
        try await send(.PUT, "/v1/apps/\(escaped(bundleId))/delivery", body: body, expect: DeliveryCredential.self)
    }

    /// Registers an app's FCM credential (admin key): its service account, and another
    /// FCM-compatible host to send to, with the authority to trust (docs/android.md).
    public func putFCMCredential(bundleId: BundleID, _ body: FCMCredentialBody) async throws -> FCMCredential {
        try await send(.PUT, "/v1/apps/\(escaped(bundleId))/fcm", body: body, expect: FCMCredential.self)
    }

    /// An app's FCM credential, without its private key.
    public func fcmCredential(bundleId: BundleID) async throws -> FCMCredential {
        try await send(.GET, "/v1/apps/\(escaped(bundleId))/fcm", expect: FCMCredential.self)
    }

    /// Stops delivery to Android phones for an app (admin key).
    public func deleteFCMCredential(bundleId: BundleID) async throws {
        _ = try await send(.DELETE, "/v1/apps/\(escaped(bundleId))/fcm", expect: NoContent.self)
    }

    /// Reports an Android phone's registration token for an app (the admin names the app).
    public func registerFCMToken(_ token: String, device: DeviceID, bundleId: BundleID? = nil) async throws -> PhoneToken {
        try await registerFCMAddress(.token(token), device: device, bundleId: bundleId)
    }

    /// Reports where FCM reaches an Android phone's app: its registration token or its Firebase
    /// installation ID (the admin names the app).
    public func registerFCMAddress(_ address: FCMAddress, device: DeviceID, bundleId: BundleID? = nil) async throws -> PhoneToken {
        try await send(.PUT, "/v1/devices/\(escaped(device))/fcm-token", body: FCMTokenBody(address, bundleId: bundleId), expect: PhoneToken.self)
    }

    /// A service account this server issues, playing Google (admin key): its JSON, as Google's
    /// console downloads one, with `token_uri` pointing at this server.
    public func issueServiceAccount(projectId: String, tokenUri: String? = nil) async throws -> JSONValue {
        try await send(.POST, "/v1/fcm/service-accounts", body: ServiceAccountBody(projectId: projectId, tokenUri: tokenUri), expect: JSONValue.self)
    }

    /// An app's delivery credentials, without their keys.
    public func deliveryCredentials(bundleId: BundleID) async throws -> [DeliveryCredential] {
        try await send(.GET, "/v1/apps/\(escaped(bundleId))/delivery", expect: Listing<DeliveryCredential>.self).items
    }

    /// Adds a key to an app's set for its environment (admin key): it signs from now on
    /// (docs/delivery.md, "Key sets").
    public func addDeliveryKey(bundleId: BundleID, _ body: DeliveryCredentialBody) async throws -> DeliveryCredential {
        try await send(.POST, "/v1/apps/\(escaped(bundleId))/delivery/keys", body: body, expect: DeliveryCredential.self)
    }

    /// An app's delivery keys, each environment's oldest first.
    public func deliveryKeys(bundleId: BundleID) async throws -> [DeliveryCredential] {
        try await send(.GET, "/v1/apps/\(escaped(bundleId))/delivery/keys", expect: Listing<DeliveryCredential>.self).items
    }

    /// Removes one key from an app's set (admin key), in one environment or wherever it is.
    public func deleteDeliveryKey(bundleId: BundleID, keyId: String, environment: APNsEnvironment? = nil) async throws {
        let query = environment.map { queryString([("environment", $0.rawValue)]) } ?? ""
        _ = try await send(.DELETE, "/v1/apps/\(escaped(bundleId))/delivery/keys/\(escaped(keyId))" + query, expect: NoContent.self)
    }

    /// Stops delivery for an app, in one environment or both (admin key).
    public func deleteDeliveryCredentials(bundleId: BundleID, environment: APNsEnvironment? = nil) async throws {
        let query = environment.map { queryString([("environment", $0.rawValue)]) } ?? ""
        _ = try await send(.DELETE, "/v1/apps/\(escaped(bundleId))/delivery" + query, expect: NoContent.self)
    }

    /// Records a phone's push-to-start token for the key's app and an activity type.
    public func registerPushToStartToken(
        _ token: String, environment: APNsEnvironment, device: DeviceID, attributesType: String, bundleId: BundleID? = nil
    ) async throws -> PhoneToken {
        try await send(
            .PUT, "/v1/devices/\(escaped(device))/push-to-start-tokens/\(escaped(attributesType))",
            body: PushToStartTokenBody(token: token, environment: environment, bundleId: bundleId), expect: PhoneToken.self
        )
    }

    /// Records an activity's update token on its phone.
    public func registerUpdateToken(_ token: String, activity: ActivityID, device: DeviceID) async throws -> PhoneToken {
        try await send(
            .PUT, "/v1/activities/\(escaped(activity))/push-token", body: PushTokenBody(token: token, device: device),
            expect: PhoneToken.self
        )
    }

    /// A device and the tokens its apps reported.
    public func phone(_ device: DeviceID) async throws -> PhoneBody {
        try await send(.GET, "/v1/devices/\(escaped(device))", expect: PhoneBody.self)
    }

    /// Sends a failed, held or waiting delivery again at once.
    public func retryDelivery(_ id: Int64) async throws -> RetriedDelivery {
        try await send(.POST, "/v1/deliveries/\(id)/retry", expect: RetriedDelivery.self)
    }

    /// An activity's delivery log, oldest first.
    public func deliveries(_ id: ActivityID) async throws -> [DeliveryLine] {
        try await every("/v1/activities/\(escaped(id))/deliveries", DeliveryLine.self)
    }

    // MARK: Events

    /// Where a live event stream starts and what it carries.
    public struct StreamOptions: Sendable {
        /// Which events.
        public var filter: EventFilter
        /// Resume after this event id; `nil` for live events only.
        public var since: EventID?
        /// Whether a newer content update may replace an older one not yet sent.
        public var coalesce: Bool

        /// Creates stream options.
        public init(filter: EventFilter = EventFilter(), since: EventID? = nil, coalesce: Bool = true) {
            self.filter = filter
            self.since = since
            self.coalesce = coalesce
        }
    }

    /// Live events over Server-Sent Events, on one connection: the sequence ends when the
    /// server ends the stream and throws when the connection fails. Resume with the last
    /// event's id as `since`.
    ///
    /// It returns once the server has confirmed the subscription, so every event committed
    /// after it returns is delivered.
    public func events(_ options: StreamOptions = StreamOptions()) async throws -> AsyncThrowingStream<Event, any Error> {
        var query: [(String, String)] = []
        if let bundleId = options.filter.bundleId { query.append(("bundleId", bundleId)) }
        if let deviceId = options.filter.deviceId { query.append(("device", deviceId)) }
        if let activityId = options.filter.activityId { query.append(("activity", activityId)) }
        if let since = options.since { query.append(("since", "\(since)")) }
        if !options.coalesce { query.append(("coalesce", "false")) }
        var request = HTTPClientRequest(url: server + "/v1/events" + queryString(query))
        request.headers.add(name: "Accept", value: "text/event-stream")
        if let key { request.headers.add(name: "Authorization", value: "Bearer \(key)") }
        let response: HTTPClientResponse
        do {
            // A stream has no end: it lives until the server closes it or the read timeout sees
            // it silent (the server sends keep-alives every 15 s). Clients reconnect daily.
            response = try await http.execute(request, deadline: .now() + .hours(24), logger: logger)
        } catch {
            throw ClientError.unreachable(server: server, cause: error)
        }
        guard response.status == .ok else {
            let body = try await response.body.collect(upTo: 1 << 20)
            throw Self.failure(status: Int(response.status.code), body: body)
        }
        let (stream, continuation) = AsyncThrowingStream<Event, any Error>.makeStream()
        let (subscribed, confirm) = AsyncStream<Void>.makeStream()
        let reader = Task {
            defer { confirm.finish() }
            var parser = ServerSentEventParser()
            let decoder = WireFormat.decoder()
            do {
                for try await buffer in response.body {
                    let messages = parser.feed(buffer.readableBytesView)
                    // The server's first words (": connected") confirm the subscription.
                    if !parser.takeComments().isEmpty || !messages.isEmpty {
                        confirm.finish()
                    }
                    for message in messages {
                        continuation.yield(try decoder.decode(Event.self, from: Data(message.data.utf8)))
                    }
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in reader.cancel() }
        for await _ in subscribed {}
        return stream
    }

    /// The server's health.
    public func health() async throws -> JSONValue {
        try await send(.GET, "/healthz", expect: JSONValue.self)
    }

    /// Whom the client's key speaks for (`GET /v1/whoami`).
    public func whoami() async throws -> KeyIdentity {
        try await send(.GET, "/v1/whoami", expect: KeyIdentity.self)
    }

    /// The id of the newest event the server has recorded, blocking the calling thread (see
    /// `sendBlocking`): where a stream that must miss nothing from now on starts.
    public func lastEventIDBlocking() throws -> EventID {
        struct Health: Decodable { var lastEventId: EventID }
        return try sendBlocking(.GET, "/healthz", expect: Health.self).lastEventId
    }

    // MARK: Transport

    /// Every item of a listing, page after page.
    func every<Item: Codable & Sendable>(_ path: String, _ item: Item.Type) async throws -> [Item] {
        var items: [Item] = []
        var cursor: String?
        repeat {
            let query = queryString([("limit", "1000")] + (cursor.map { [("cursor", $0)] } ?? []))
            // A path with a query of its own (`?tag=…`) takes the page's after it.
            let page = try await send(.GET, path.contains("?") ? path + "&" + query.dropFirst() : path + query, expect: Listing<Item>.self)
            items += page.items
            cursor = page.next
        } while cursor != nil
        return items
    }

    func send<Response: Decodable>(
        _ method: HTTPMethod, _ path: String, body: (some Encodable)? = JSONValue?.none, expect: Response.Type
    ) async throws -> Response {
        var request = HTTPClientRequest(url: server + path)
        request.method = method
        if let key { request.headers.add(name: "Authorization", value: "Bearer \(key)") }
        // A change carries a key of its own (docs/audiences.md): sent again after a failure that
        // may have reached the server, it is done once, and the retry gets the first answer.
        let changes = Self.changes(method)
        if changes { request.headers.add(name: Idempotency.header, value: UUID().uuidString) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(data: try WireFormat.encoder().encode(body)))
        }
        var attempt = 0
        while true {
            attempt += 1
            let status: Int
            let bytes: ByteBuffer
            do {
                let response = try await Self.sentAgainIfUnsent { try await http.execute(request, timeout: timeout, logger: logger) }
                status = Int(response.status.code)
                bytes = try await response.body.collect(upTo: 64 << 20)
            } catch where changes && attempt < Self.attempts && Self.mayHaveReachedTheServer(error) {
                try await Task.sleep(for: .milliseconds(250 * attempt))
                continue
            } catch {
                throw ClientError.unreachable(server: server, cause: error)
            }
            // The first request with the key still runs: its answer comes to a retry.
            if changes, attempt < Self.attempts, status == 409, Self.reason(in: bytes) == ErrorReason.idempotencyKeyInUse.rawValue {
                try await Task.sleep(for: .milliseconds(250 * attempt))
                continue
            }
            return try Self.decode(Response.self, status: status, body: bytes)
        }
    }

    /// Tries of a change whose answer was lost, or whose first try still runs.
    static let attempts = 4

    /// Whether a request changes something (and so carries an `Idempotency-Key`).
    static func changes(_ method: HTTPMethod) -> Bool {
        [.POST, .PUT, .PATCH, .DELETE].contains(method)
    }

    /// Whether a request failed after it may have been written: the connection broke, or no
    /// answer came. Only a change with a key is sent again then.
    static func mayHaveReachedTheServer(_ error: any Error) -> Bool {
        if let error = error as? HTTPClientError {
            return error == .remoteConnectionClosed || error == .readTimeout
        }
        if let error = error as? IOError { return [ECONNRESET, EPIPE].contains(error.errnoCode) }
        return (error as? ChannelError) == .eof
    }

    /// The `reason` of an error answer, if it is one.
    private static func reason(in bytes: ByteBuffer) -> String? {
        (try? WireFormat.decoder().decode(JSONValue.self, from: Data(bytes.readableBytesView)))?["error"]?["reason"]?.stringValue
    }

    /// `send`, blocking the calling thread until the server answers: for APIs that are
    /// synchronous by contract (ActivityKit's `request`). It waits on async-http-client's event
    /// loops, never on Swift's cooperative pool, so it cannot starve the tasks that answer it;
    /// do not call it on an event loop.
    private func sendBlocking<Response: Decodable>(
        _ method: HTTPMethod, _ path: String, body: (some Encodable)? = JSONValue?.none, expect: Response.Type
    ) throws -> Response {
        var request: HTTPClient.Request
        do {
            request = try HTTPClient.Request(url: server + path, method: method)
        } catch {
            throw ClientError.unreachable(server: server, cause: error)
        }
        if let key { request.headers.add(name: "Authorization", value: "Bearer \(key)") }
        if Self.changes(method) { request.headers.add(name: Idempotency.header, value: UUID().uuidString) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .data(try WireFormat.encoder().encode(body))
        }
        let response: HTTPClient.Response
        do {
            response = try Self.sentAgainIfUnsent { try execute(request, deadline: .now() + timeout).wait() }
        } catch {
            throw ClientError.unreachable(server: server, cause: error)
        }
        let bytes = response.body ?? ByteBuffer()
        return try Self.decode(Response.self, status: Int(response.status.code), body: bytes)
    }

    /// Runs one request, and once more if it was never sent (`wasNeverSent`); a request that
    /// failed any other way is not sent again, as the server may have acted on it.
    private static func sentAgainIfUnsent<T>(_ request: () async throws -> T) async throws -> T {
        do {
            return try await request()
        } catch where wasNeverSent(error) {
            return try await request()
        }
    }

    /// The blocking path's request, logged where the client's logger says.
    private func execute(_ request: HTTPClient.Request, deadline: NIODeadline) -> EventLoopFuture<HTTPClient.Response> {
        if let logger { return http.execute(request: request, deadline: deadline, logger: logger) }
        return http.execute(request: request, deadline: deadline)
    }

    /// `sentAgainIfUnsent`, for the blocking path.
    private static func sentAgainIfUnsent<T>(_ request: () throws -> T) throws -> T {
        do {
            return try request()
        } catch where wasNeverSent(error) {
            return try request()
        }
    }

    /// Whether a request failed before any of it was written: it went out on a kept-alive
    /// connection that the server had closed (a restart, its idle timeout) before the pool saw
    /// the close. The server never saw it, so sending it again cannot do anything twice.
    private static func wasNeverSent(_ error: any Error) -> Bool {
        (error as? ChannelError) == .ioOnClosedChannel
    }

    /// The answer of a request that has none (`204 No Content`).
    struct NoContent: Decodable {}

    private static func decode<Response: Decodable>(_ type: Response.Type, status: Int, body bytes: ByteBuffer) throws -> Response {
        guard (200..<300).contains(status) else {
            throw failure(status: status, body: bytes)
        }
        if bytes.readableBytes == 0, let none = NoContent() as? Response { return none }
        do {
            return try WireFormat.decoder().decode(Response.self, from: Data(buffer: bytes))
        } catch {
            throw ClientError.unexpected(status: status, body: String(buffer: bytes))
        }
    }

    private static func failure(status: Int, body: ByteBuffer) -> ClientError {
        if let error = try? WireFormat.decoder().decode(ErrorBody.self, from: Data(buffer: body)) {
            return .refused(status: status, error.isletError)
        }
        return .unexpected(status: status, body: String(buffer: body))
    }

    func escaped(_ component: String) -> String {
        component.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? component
    }

    func queryString(_ items: [(String, String)]) -> String {
        guard !items.isEmpty else { return "" }
        var allowed = CharacterSet.urlQueryAllowed
        allowed.remove(charactersIn: "&=+")
        return "?" + items.map { name, value in
            "\(name)=\(value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value)"
        }.joined(separator: "&")
    }
}
