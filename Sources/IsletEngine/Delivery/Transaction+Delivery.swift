import Foundation
import IsletCore

/// Writing deliveries: in the transaction of the change that causes them, so a change and its
/// delivery are committed together or not at all.
extension Transaction {
    /// The delivery a start makes when its device is a phone with a push-to-start token for the
    /// app and the type, and the app delivers (it has credentials). Refuses the start when the
    /// app's attributes cannot carry Islet's reference.
    func deliverStart(of activity: Activity, alert requested: Alert?, context: StartContext) throws {
        // The app started it on the phone itself: a push-to-start would show it twice.
        if activity.source == .phone { return }
        if context.deliversToAndroid, let token = try phoneFCMToken(deviceId: activity.deviceId, bundleId: activity.bundleId) {
            return try deliverAndroidStart(of: activity, alert: requested, to: token)
        }
        guard context.deliversToApple,
            let token = try pushToStartToken(deviceId: activity.deviceId, bundleId: activity.bundleId, attributesType: activity.attributesType)
        else { return }
        if activity.attributes[Payloads.reference] != nil {
            throw IsletError(
                .invalidRequest,
                "attributes.\(Payloads.reference) is where Islet puts the activity's id on a push-to-start (docs/delivery.md); the app's attributes cannot use that name."
            )
        }
        var carried = activity.attributes.objectValue ?? [:]
        carried[Payloads.reference] = .string(activity.id)
        if let mismatch = context.type?.attributes?.mismatch(in: .object(carried), at: "attributes") {
            throw IsletError(
                .attributesMismatch,
                "\(mismatch): the registered attributes of \(activity.attributesType) cannot carry Islet's activity id in \"\(Payloads.reference)\" (a String?), which a push-to-start needs."
            )
        }
        var notes = ["push-to-start to \(token.shortened) (\(token.environment.rawValue))"]
        let alert: Alert
        if let requested {
            alert = requested
        } else {
            // Apple drops a push-to-start without an alert, silently.
            alert = Alert(title: context.app.name, body: "")
            notes.append("an alert supplied (\"\(alert.title)\"): a push-to-start needs one")
        }
        var channelId: String?
        if case .channel(let id) = activity.pushType { channelId = id }
        try putPhoneActivity(PhoneActivity(
            activityId: activity.id, bundleId: activity.bundleId, deviceId: activity.deviceId, environment: token.environment,
            channelId: channelId
        ))
        let payload = try Payloads.text(Payloads.start(activity, alert: alert))
        try queue(event: .start, payload: payload, alert: true, of: activity, after: activity.scheduledStart, notes: notes)
    }

    /// The delivery a start on an Android phone makes: one FCM message whose `data.islet` says
    /// `start` (docs/android.md). Android needs no push-to-start token nor an alert.
    private func deliverAndroidStart(of activity: Activity, alert: Alert?, to token: PhoneToken) throws {
        try putPhoneActivity(PhoneActivity(
            activityId: activity.id, bundleId: activity.bundleId, deviceId: activity.deviceId, environment: .production, platform: .android
        ))
        let islet = try androidIslet(event: .start, of: activity, content: activity.content, timestamp: now, alert: alert)
        try queue(
            event: .start, payload: islet, alert: true, of: activity, after: activity.scheduledStart,
            notes: ["to Android phone \(token.shortened) through FCM"]
        )
    }

    /// `data.islet` for a change of an activity on an Android phone, with the notification its
    /// type draws; refused when FCM could not take it.
    private func androidIslet(
        event: Delivery.Event, of activity: Activity, content: ActivityContent, timestamp: Date, dismissal: Date? = nil, alert: Alert? = nil
    ) throws -> String {
        let layout = try self.layout(bundleId: activity.bundleId, attributesType: activity.attributesType)
        let notification = AndroidPayloads.notification(of: activity, content: content, layout: layout, now: now)
        return try AndroidPayloads.text(AndroidPayloads.islet(
            event: event.rawValue, activity: activity, content: content, timestamp: timestamp, dismissal: dismissal, alert: alert,
            notification: notification
        ))
    }

    /// The delivery a change to a phone's activity makes: an applied update, an end, a person's
    /// dismissal — an APNs payload or, on an Android phone, an FCM message's `data.islet`. What
    /// the rules ignored is not sent; an update waiting in the outbox is coalesced into the newer one.
    ///
    /// - Parameter successor: For a renewed activity's end, its successor: the end goes after the
    ///   successor's start, in its order, so the phone never shows neither.
    func deliverChange(_ input: Activity.Input, transition: Transition, of activity: Activity, after successor: ActivityID? = nil) throws {
        guard transition.ignored == nil, let phone = try phoneActivity(activity.id),
            let change = SentChange(input, transition: transition, of: activity, now: now)
        else { return }
        let text: String
        switch (phone.platform, change.event) {
        case (.ios, .update):
            text = try Payloads.text(Payloads.update(change.content, timestamp: change.timestamp, alert: change.alert))
        case (.ios, _):
            text = try Payloads.text(Payloads.end(change.content, timestamp: change.timestamp, dismissal: change.dismissal))
        case (.android, _):
            text = try androidIslet(
                event: change.event, of: activity, content: change.content, timestamp: change.timestamp, dismissal: change.dismissal,
                alert: change.alert
            )
        }
        let alert = change.alert != nil
        if phone.state == .tokenRetired {
            let why = phone.platform == .android ? "FCM retired this phone's registration token" : "Apple retired this activity's token on the phone"
            return try queue(event: change.event, payload: text, alert: alert, of: activity, finished: .dropped, notes: ["not sent: \(why)"])
        }
        if let channelId = phone.channelId {
            return try queue(
                event: change.event, payload: text, alert: alert, of: activity, finished: .dropped,
                notes: ["not sent: this activity joined channel \(channelId), whose changes go by broadcast (POST /v1/apps/\(activity.bundleId)/channels/\(channelId)/broadcast)"]
            )
        }
        try queue(
            event: change.event, payload: text, alert: alert, of: activity, order: successor.map(Delivery.Order.activity),
            notes: successor.map { ["after \($0)'s start: renewed"] } ?? []
        )
    }

    /// Writes a delivery for an activity and says so in its log; an update waiting before it is
    /// coalesced into it.
    private func queue(
        event: Delivery.Event, payload: String, alert: Bool, of activity: Activity, after start: Date? = nil,
        finished: Delivery.State? = nil, order: Delivery.Order? = nil, notes: [String]
    ) throws {
        let order = order ?? .activity(activity.id)
        var delivery = Delivery(
            order: order, activityId: activity.id, bundleId: activity.bundleId, deviceId: activity.deviceId, event: event,
            payload: payload, alert: alert, expiration: (start ?? now).addingTimeInterval(Deliveries.lifetime),
            state: finished ?? .pending, nextAttemptAt: max(start ?? now, now), createdAt: now, finishedAt: finished.map { _ in now },
            traceparent: TraceParent.current()
        )
        delivery.id = try insertDelivery(delivery)
        try report(DeliveryReport(
            delivery: delivery.id, event: event.rawValue, outcome: finished == nil ? .queued : .dropped,
            note: notes.isEmpty ? nil : notes.joined(separator: "; ")
        ), of: activity)
        guard finished == nil else { return }
        if event != .start {
            // An alert is never coalesced away: the person is to hear it (and it goes at priority 10).
            for var earlier in try unfinishedDeliveries(in: order) where earlier.id < delivery.id && earlier.event == .update
                && !earlier.alert && [.pending, .held].contains(earlier.state)
            {
                earlier.finish(.coalesced, at: now)
                try updateDelivery(earlier)
                try report(DeliveryReport(
                    delivery: earlier.id, event: earlier.event.rawValue, outcome: .coalesced, coalescedInto: delivery.id,
                    note: "not sent: #\(delivery.id) carries a newer state"
                ), of: activity)
            }
        }
        effects.deliveriesReady = true
    }

    /// Appends a line to the activity's delivery log (a `delivery` event).
    func report(_ report: DeliveryReport, of activity: Activity) throws {
        try append(.delivery(report), bundleId: activity.bundleId, deviceId: activity.deviceId, activityId: activity.id)
    }
}

/// What a change sends to a phone, whatever the platform: an applied update (its content and
/// timestamp, its alert), or an end (the activity's content at its last update's time, and the
/// dismissal date its policy decided; now for a person's dismissal).
private struct SentChange {
    var event: Delivery.Event
    var content: ActivityContent
    var timestamp: Date
    var dismissal: Date?
    var alert: Alert?

    init?(_ input: Activity.Input, transition: Transition, of activity: Activity, now: Date) {
        switch input {
        case .update(let update):
            guard let applied = transition.appliedContent else { return nil }
            (event, content, timestamp, alert) = (.update, applied.content, applied.timestamp, update.alert)
        case .end(let end):
            (event, content, timestamp) = (.end, activity.content, activity.lastUpdateTimestamp ?? now)
            dismissal = Deliveries.dismissalDate(end.dismissalPolicy, now: now, decided: activity.dismissAt ?? activity.dismissedAt)
        case .userDismissal:
            (event, content, timestamp, dismissal) = (.end, activity.content, activity.lastUpdateTimestamp ?? now, now)
        default:
            return nil
        }
    }
}

extension Transition {
    /// The content an update applied, if it did.
    var appliedContent: ContentChange? {
        for case .contentUpdated(let change) in payloads.reversed() { return change }
        return nil
    }
}

/// The outbox's rules, in one place.
enum Deliveries {
    /// How long a delivery is worth trying: a Live Activity lives eight hours at most.
    static let lifetime: TimeInterval = 8 * 3600

    /// An end's `dismissal-date`: none for the default policy (the phone keeps it up to four
    /// hours), now for `immediate`, and for `after` the date the rules `decided` (the policy's
    /// own date when nothing decided it here, as for a broadcast).
    static func dismissalDate(_ policy: DismissalPolicy, now: Date, decided: Date?) -> Date? {
        switch policy {
        case .default: nil
        case .immediate: now
        case .after(let date): decided ?? date
        }
    }
}
