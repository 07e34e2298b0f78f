import Foundation
import IsletCore

/// What one device shows, read at one moment: the display's first paint.
public struct DeviceDisplay: Sendable {
    /// The device.
    public var device: Device
    /// The newest event the read includes: follow the stream from here.
    public var eventId: EventID
    /// The activities shown, in relevance order, each with its presentation.
    public var activities: [(activity: Activity, presentation: Presentation)]
    /// Every app, for names.
    public var apps: [App]
    /// The device's settings for every app.
    public var settings: [AppSettings]
    /// On an Android phone, the Live Update each activity shows.
    public var android: [ActivityID: AndroidShown] = [:]
}

/// What an Android phone shows for an activity (docs/android.md, "The display"): the
/// notification the app builds, and whether Android promotes it to a Live Update.
public struct AndroidShown: Sendable, Encodable {
    /// The notification.
    public var notification: AndroidNotification
    /// `fcm` when the last FCM message carried it (`data.islet.notification`), `layout` when this
    /// server drew it from the type's layout (an activity started here, not by a message).
    public var source: String
    /// The name FCM gave the last message, and when it came.
    public var messageName: String?
    public var receivedAt: Date?
    /// Whether Android shows it as a Live Update (the chip, the top of the shade); when not,
    /// why, as Android's rules say.
    public var promoted: Bool
    public var whyNotPromoted: String?

    /// Android's rules for promotion that a message can break (the rest are the app's own:
    /// its permission, an ongoing notification, no custom view, not colorized).
    static func promotion(of notification: AndroidNotification, state: ActivityState) -> (Bool, String?) {
        if notification.title.trimmingCharacters(in: .whitespaces).isEmpty {
            return (false, "no content title: Android promotes only a notification with one")
        }
        if state == .ended {
            return (false, "ended: no longer ongoing, so Android shows it as an ordinary notification until it is dismissed")
        }
        return (true, nil)
    }
}

extension Engine {
    // MARK: Layouts

    /// Registers or replaces the layout of an app's activity type, and tells every activity of
    /// that type still on a display (a `layoutChanged` event each). The document must already
    /// be a valid layout.
    public func putLayout(bundleId: BundleID, attributesType: String, layout: JSONValue) async throws -> LayoutRecord {
        try await write { tx in
            _ = try tx.requireApp(bundleId)
            let previous = try tx.layout(bundleId: bundleId, attributesType: attributesType)?.revision ?? 0
            let record = LayoutRecord(
                bundleId: bundleId, attributesType: attributesType, layout: layout, revision: previous + 1, updatedAt: tx.now
            )
            try tx.putLayout(record)
            try Self.announceLayout(bundleId: bundleId, attributesType: attributesType, revision: record.revision, in: tx)
            return record
        }
    }

    /// Removes the layout of an app's activity type; its activities are drawn with the default
    /// card from then on. Returns whether there was one.
    public func deleteLayout(bundleId: BundleID, attributesType: String) async throws -> Bool {
        try await write { tx in
            guard try tx.deleteLayout(bundleId: bundleId, attributesType: attributesType) else { return false }
            try Self.announceLayout(bundleId: bundleId, attributesType: attributesType, revision: 0, in: tx)
            return true
        }
    }

    private static func announceLayout(bundleId: BundleID, attributesType: String, revision: Int, in tx: any Transaction) throws {
        for activity in try tx.shownActivities(bundleId: bundleId, deviceId: nil, attributesType: attributesType) {
            try tx.append(
                .layoutChanged(LayoutChange(attributesType: attributesType, revision: revision)),
                bundleId: bundleId, deviceId: activity.deviceId, activityId: activity.id
            )
        }
    }

    /// The layout of an app's activity type, if one is registered.
    public func layout(bundleId: BundleID, attributesType: String) async throws -> LayoutRecord? {
        try await read { store in try store.layout(bundleId: bundleId, attributesType: attributesType) }
    }

    /// An app's layouts, by activity type.
    public func layouts(bundleId: BundleID) async throws -> [LayoutRecord] {
        try await read { store in try store.layouts(bundleId: bundleId) }
    }

    // MARK: Presentations

    /// An activity, drawn; another app's is not found.
    public func presentation(of id: ActivityID, owner: BundleID?) async throws -> Presentation {
        let (activity, record) = try await read { store in
            let activity = try store.loadActivity(id, owner: owner)
            return (activity, try store.layout(bundleId: activity.bundleId, attributesType: activity.attributesType))
        }
        return try presentations.presentation(of: activity, layout: record)
    }

    /// The activity as it stood just after one of its events, drawn at that event's time with
    /// its type's layout as it is now: the history's snapshot at the start, then each content
    /// and state change replayed. An event of another activity is not found.
    public func presentation(of id: ActivityID, owner: BundleID?, at eventId: EventID) async throws -> Presentation {
        let (current, history, record) = try await read { store in
            let activity = try store.loadActivity(id, owner: owner)
            return (activity, try store.history(of: id), try store.layout(bundleId: activity.bundleId, attributesType: activity.attributesType))
        }
        guard let last = history.firstIndex(where: { $0.id == eventId }) else {
            throw IsletError(.invalidRequest, "at: event \(eventId) is not in activity \(id)'s history.")
        }
        let events = try history[...last].map { try $0.decoded() }
        let activity = try current.replaying(events)
        return try presentations.presentation(of: activity, layout: record, at: events.last?.time ?? current.createdAt)
    }

    /// What a device shows, in one consistent read: the activities a display shows (live and
    /// ended until dismissed, at most `limit`, most relevant first) drawn, the apps and the
    /// device's settings, and the event the read is as of.
    public func display(deviceId: DeviceID, states: Set<ActivityState>, limit: Int) async throws -> DeviceDisplay {
        let read = try await read { store in
            let eventId = try store.lastEventID()
            let device = try store.requireDevice(deviceId)
            let activities = try store.activities(ActivityFilter(deviceId: deviceId, states: states, limit: limit)).prefix(limit).map(\.activity)
            var layouts: [String: LayoutRecord?] = [:]
            for activity in activities where layouts[activity.bundleId + "\u{0}" + activity.attributesType] == nil {
                layouts[activity.bundleId + "\u{0}" + activity.attributesType] = .some(
                    try store.layout(bundleId: activity.bundleId, attributesType: activity.attributesType)
                )
            }
            let records = device.platform == .android ? try store.androidNotifications(deviceId: deviceId) : []
            return (
                eventId, device, activities, layouts, try store.apps(),
                try Self.settings(deviceId: deviceId, bundleId: nil, in: store), records
            )
        }
        let (eventId, device, activities, layouts, apps, settings, records) = read
        let drawn = try activities.map { activity in
            let record = layouts[activity.bundleId + "\u{0}" + activity.attributesType] ?? nil
            return (activity, try presentations.presentation(of: activity, layout: record))
        }
        var display = DeviceDisplay(device: device, eventId: eventId, activities: drawn, apps: apps, settings: settings)
        if device.platform == .android {
            let received = Dictionary(records.map { ($0.activityId, $0) }) { first, _ in first }
            let now = clock.now()
            for activity in activities {
                var shown: AndroidShown
                if let record = received[activity.id], let json = try? JSONSyntax.parse(Data(record.islet.utf8)),
                    let notification = try? json["notification"].map({ try $0.decode(AndroidNotification.self) })
                {
                    shown = AndroidShown(
                        notification: notification, source: "fcm", messageName: record.messageName, receivedAt: record.receivedAt,
                        promoted: true
                    )
                } else {
                    let record = layouts[activity.bundleId + "\u{0}" + activity.attributesType] ?? nil
                    let notification = AndroidPayloads.notification(of: activity, content: activity.content, layout: record, now: now)
                    shown = AndroidShown(notification: notification, source: "layout", promoted: true)
                }
                (shown.promoted, shown.whyNotPromoted) = AndroidShown.promotion(of: shown.notification, state: activity.state)
                display.android[activity.id] = shown
            }
        }
        return display
    }
}
