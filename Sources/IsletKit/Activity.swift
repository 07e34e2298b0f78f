import Foundation
import IsletClient
import IsletCore
import Logging

/// A Live Activity, as ActivityKit's `Activity`: request one, update it, end it, and read its
/// state — against an Islet server instead of the system.
public final class Activity<Attributes: ActivityAttributes>: Identifiable, EventReceiver, @unchecked Sendable {
    public typealias ContentState = Attributes.ContentState

    /// The activity's identifier, the server's.
    public let id: String
    /// Its static data.
    public let attributes: Attributes
    private let connection: IsletConnection
    // Content states need not be Sendable (ActivityKit does not ask it), so a lock guards them.
    private let lock = NSLock()
    private var snapshot: Snapshot

    struct Snapshot {
        var state: ActivityState
        var content: ActivityContent<ContentState>
        var pushToken: Data?
    }

    init(id: String, attributes: Attributes, snapshot: Snapshot, connection: IsletConnection) {
        self.id = id
        self.attributes = attributes
        self.snapshot = snapshot
        self.connection = connection
    }

    /// Where the activity is in its life.
    public var activityState: ActivityState { lock.withLock { snapshot.state } }
    /// Its current content.
    public var content: ActivityContent<ContentState> { lock.withLock { snapshot.content } }
    /// Its current content state.
    @available(*, deprecated, renamed: "content.state")
    public var contentState: ContentState { content.state }
    /// Its push token, when it was requested with `pushType: .token`.
    public var pushToken: Data? { lock.withLock { snapshot.pushToken } }

    // MARK: Starting

    /// Starts a Live Activity; returns when the server has it. Throws
    /// `ActivityAuthorizationError` when the rules refuse it (Live Activities off, a limit,
    /// too large).
    public static func request(
        attributes: Attributes, content: ActivityContent<ContentState>, pushType: PushType? = nil,
        style: ActivityStyle = .standard
    ) throws -> Activity<Attributes> {
        let connection = IsletConnection.shared
        let request = IsletCore.ActivityRequest(
            attributesType: Attributes.attributesTypeName, attributes: try Wire.json(attributes),
            content: try Wire.content(content), pushType: pushType.map(Wire.pushType),
            style: style == .transient ? .transient : .standard, deviceId: connection.device,
            source: .phone
        )
        let started: IsletCore.Activity
        do {
            started = try connection.client.startBlocking(request, bundleId: connection.app)
        } catch let error as ClientError {
            throw Wire.authorizationError(error) ?? error
        }
        // Follow events from here on: the new activity's sequences see every later change, and
        // not the events of its own start, which the answer already holds.
        connection.feed.start()
        return try Registry.shared.activity(for: started, attributes: attributes, connection: connection)
    }

    /// Starts a Live Activity with a content state and no stale date (iOS 16.1's form).
    @available(*, deprecated, renamed: "request(attributes:content:pushType:)")
    public static func request(
        attributes: Attributes, contentState: ContentState, pushType: PushType? = nil
    ) throws -> Activity<Attributes> {
        try request(attributes: attributes, content: ActivityContent(state: contentState, staleDate: nil), pushType: pushType)
    }

    // MARK: Updating

    /// Replaces the content. Like ActivityKit, it does not throw: an update the rules ignore
    /// (the activity has ended, an older timestamp) is logged.
    public func update(_ content: ActivityContent<ContentState>, alertConfiguration: AlertConfiguration? = nil) async {
        await send(update: content, alert: alertConfiguration, timestamp: nil)
    }

    /// Replaces the content unless a newer update was applied already.
    public func update(
        _ content: ActivityContent<ContentState>, alertConfiguration: AlertConfiguration? = nil, timestamp: Date
    ) async {
        await send(update: content, alert: alertConfiguration, timestamp: timestamp)
    }

    /// Replaces the content state, keeping the relevance score (iOS 16.1's form).
    @available(*, deprecated, renamed: "update(_:alertConfiguration:)")
    public func update(using contentState: ContentState, alertConfiguration: AlertConfiguration? = nil) async {
        let relevance = content.relevanceScore
        await send(update: ActivityContent(state: contentState, staleDate: nil, relevanceScore: relevance), alert: alertConfiguration, timestamp: nil)
    }

    // MARK: Ending

    /// Ends the activity, with final content if given; `dismissalPolicy` says when it leaves the
    /// Lock Screen.
    public func end(_ content: ActivityContent<ContentState>?, dismissalPolicy: ActivityUIDismissalPolicy = .default) async {
        await send(end: content, dismissalPolicy: dismissalPolicy, timestamp: nil)
    }

    /// Ends the activity; final content older than an applied update is not applied.
    public func end(
        _ content: ActivityContent<ContentState>?, dismissalPolicy: ActivityUIDismissalPolicy = .default, timestamp: Date
    ) async {
        await send(end: content, dismissalPolicy: dismissalPolicy, timestamp: timestamp)
    }

    /// Ends the activity with a final content state (iOS 16.1's form).
    @available(*, deprecated, renamed: "end(_:dismissalPolicy:)")
    public func end(using contentState: ContentState? = nil, dismissalPolicy: ActivityUIDismissalPolicy = .default) async {
        let relevance = content.relevanceScore
        await send(
            end: contentState.map { ActivityContent(state: $0, staleDate: nil, relevanceScore: relevance) },
            dismissalPolicy: dismissalPolicy, timestamp: nil
        )
    }

    // MARK: Listing

    /// The app's activities of this type on the device that are not dismissed yet.
    public static var activities: [Activity<Attributes>] {
        let connection = IsletConnection.shared
        let filter = ActivityFilter(
            bundleId: connection.app, deviceId: connection.device, states: [.pending, .active, .stale, .ended], attributesType: Attributes.attributesTypeName,
            limit: 1000
        )
        do {
            return try connection.client.activitiesBlocking(filter).compactMap { activity in
                do {
                    return try Registry.shared.activity(for: activity, attributes: nil, connection: connection)
                } catch {
                    connection.logger.warning("An activity's attributes do not decode as \(Attributes.self)", metadata: ["id": "\(activity.id)", "error": "\(error)"])
                    return nil
                }
            }
        } catch {
            connection.logger.error("Could not list activities", metadata: ["error": "\(error)"])
            return []
        }
    }

    // MARK: Observing

    /// Each lifecycle state the activity moves to, from now on; ends after `dismissed`.
    public var activityStateUpdates: AsyncStream<ActivityState> {
        let id = self.id
        return .following(connection.feed) { event in
            guard event.activityId == id, event.type == .stateChanged, let change = Wire.payload(StateChange.self, of: event)
            else { return nil }
            let state = ActivityState(rawValue: change.to.rawValue) ?? .active
            return state == .dismissed ? .last(state) : .value(state)
        }
    }

    /// Each new content, from now on (updates from anywhere: this process, others, pushes).
    public var contentUpdates: AsyncStream<ActivityContent<ContentState>> {
        let id = self.id
        return .following(connection.feed) { event in
            guard event.activityId == id, event.type == .contentUpdated, let change = Wire.payload(ContentChange.self, of: event)
            else { return nil }
            return (try? Wire.content(change.content, as: ContentState.self)).map { .value($0) }
        }
    }

    /// The activity's push token now (if it has one), then each new one.
    public var pushTokenUpdates: AsyncStream<Data> {
        let id = self.id
        let token = pushToken
        return .following(connection.feed, first: { token }) { event in
            guard event.activityId == id, event.type == .pushTokenUpdated,
                let change = Wire.payload(PushTokenChange.self, of: event), change.kind == .activity
            else { return nil }
            return Wire.hexData(change.pushToken).map { .value($0) }
        }
    }

    /// Each activity of this type that starts from now on — by this process, another, or a
    /// push-to-start.
    public static var activityUpdates: AsyncStream<Activity<Attributes>> {
        let connection = IsletConnection.shared
        return .following(connection.feed) { event in
            guard event.type == .started, let started = Wire.payload(IsletCore.Activity.self, of: event),
                started.attributesType == Attributes.attributesTypeName,
                let activity: Activity<Attributes> = try? Registry.shared.activity(for: started, attributes: nil, connection: connection)
            else { return nil }
            return .value(activity)
        }
    }

    /// The app's push-to-start token on the device: a push with `"event": "start"` to it starts
    /// an activity of this type.
    public static var pushToStartToken: Data? {
        ActivityAuthorizationInfo.settings(IsletConnection.shared)?.pushToStartToken.flatMap(Wire.hexData)
    }

    /// The push-to-start token now, then each new one.
    public static var pushToStartTokenUpdates: AsyncStream<Data> {
        let connection = IsletConnection.shared
        let token = pushToStartToken
        return .following(connection.feed, first: { token }) { event in
            guard event.type == .pushTokenUpdated, let change = Wire.payload(PushTokenChange.self, of: event),
                change.kind == .pushToStart
            else { return nil }
            return Wire.hexData(change.pushToken).map { .value($0) }
        }
    }

    // MARK: The server's answers

    /// Takes the server's view of the activity.
    func apply(_ activity: IsletCore.Activity) throws {
        let next = try Wire.snapshot(of: activity, as: Attributes.self)
        lock.withLock { snapshot = next }
    }

    func receive(_ event: Event) {
        lock.withLock {
            switch event.type {
            case .contentUpdated:
                if let change = Wire.payload(ContentChange.self, of: event),
                    let content = try? Wire.content(change.content, as: ContentState.self)
                {
                    snapshot.content = content
                }
            case .stateChanged:
                if let change = Wire.payload(StateChange.self, of: event), let state = ActivityState(rawValue: change.to.rawValue) {
                    snapshot.state = state
                }
            case .pushTokenUpdated:
                if let change = Wire.payload(PushTokenChange.self, of: event), change.kind == .activity {
                    snapshot.pushToken = Wire.hexData(change.pushToken)
                }
            default:
                break
            }
        }
    }

    private func send(update content: ActivityContent<ContentState>, alert: AlertConfiguration?, timestamp: Date?) async {
        do {
            let body = IsletCore.ContentUpdate(content: try Wire.content(content), alert: alert.map(Wire.alert), timestamp: timestamp)
            try apply(try await connection.client.update(id, body))
        } catch {
            connection.logger.warning("The update was not applied", metadata: ["id": "\(id)", "error": "\(error)"])
            // Refused because the activity moved on (ended, dismissed) before this process heard
            // of it on the stream: the server's view is read, so `activityState` says so now.
            if case ClientError.refused(409, _) = error, let current = try? await connection.client.activity(id) {
                try? apply(current)
            }
        }
    }

    private func send(end content: ActivityContent<ContentState>?, dismissalPolicy: ActivityUIDismissalPolicy, timestamp: Date?) async {
        do {
            let body = IsletCore.EndRequest(
                content: try content.map(Wire.content), dismissalPolicy: Wire.dismissalPolicy(dismissalPolicy), timestamp: timestamp
            )
            try apply(try await connection.client.end(id, body))
        } catch {
            connection.logger.warning("The end was not applied", metadata: ["id": "\(id)", "error": "\(error)"])
        }
    }
}
