import Foundation
import IsletCore

/// A message to a registration token or an installation ID, as Islet playing Google hands it
/// over once FCM's rules (access token, body, quota) have passed (docs/android.md).
public struct AndroidPush: Sendable {
    /// Where it was sent: `message.token` or `message.fid`, as sent.
    public var address: FCMAddress
    /// The name FCM answers the message with (`projects/{project}/messages/{id}`).
    public var messageName: String
    /// `data.islet`, when the message has one.
    public var islet: String?

    public init(address: FCMAddress, messageName: String, islet: String?) {
        self.address = address
        self.messageName = messageName
        self.islet = islet
    }
}

extension Engine {
    /// Takes a message to an Android phone as its app would: finds the phone and app the token
    /// or installation ID belongs to (each sent in its own field), reads `data.islet`, and starts, updates or ends the activity it names — by the
    /// rules an iPhone applies a push with — keeping what the notification shows; or drops it
    /// and records why. All in one transaction.
    ///
    /// - Throws: `PushRefusal.unknownToken` or `.retired` when FCM itself refuses it (`404
    ///   UNREGISTERED`).
    public func deliver(_ push: AndroidPush) async throws -> PushResult {
        let rules = self.rules
        return try await write { tx in
            let (deviceId, bundleId): (DeviceID, BundleID)
            switch (try tx.token(push.address.value), push.address) {
            case (.fcm(let device, let app), .token), (.fid(let device, let app), .fid): (deviceId, bundleId) = (device, app)
            case (.retired(let at, let reason, _), _): throw PushRefusal.retired(since: at, rotated: reason == "rotated")
            default: throw PushRefusal.unknownToken
            }
            let app = try tx.requireApp(bundleId)
            guard let text = push.islet else {
                let ignored = try Self.dropOnPhone(
                    "The message has no data.islet: the app builds its Live Update from it.", payload: nil, deviceId: deviceId,
                    bundleId: bundleId, in: tx
                )
                return PushResult(ignored: ignored, strict: app.strictPushes, activityId: nil, deviceId: deviceId)
            }
            let data = IsletData.read(text, device: deviceId)
            let shown = try data.tag.flatMap { try tx.androidNotification(deviceId: deviceId, bundleId: bundleId, tag: $0) }
            var activity = try shown.flatMap { try tx.activity($0.activityId) }
            if activity?.state == .dismissed { activity = nil }
            var ignored: PushResult.IgnoredPush?
            var activityId = activity?.id
            if case .start = data.payload.action, activity == nil {
                (activityId, ignored) = try Self.pushToStart(data.payload, deviceId: deviceId, bundleId: bundleId, rules: rules, in: tx)
            } else if case .start = data.payload.action {
                // A start sent again (its answer was lost): the notification is already there.
                ignored = try Self.dropOnPhone(
                    "The app already shows \(data.tag ?? ""): a second start changes nothing.", payload: data.payload, deviceId: deviceId,
                    bundleId: bundleId, in: tx
                )
            } else if var current = activity {
                // Android has no push budget: the rules apply as to a priority-5 push.
                ignored = try Self.push(data.payload, priority: 5, to: &current, rules: rules, in: tx)
            } else {
                ignored = try Self.dropOnPhone(
                    "No notification of \(bundleId) is tagged \(data.tag ?? "(no activityId)") on this phone: its start never came, or it was dismissed.",
                    payload: data.payload, deviceId: deviceId, bundleId: bundleId, in: tx
                )
            }
            if ignored == nil, let activityId, let tag = data.tag {
                try tx.putAndroidNotification(AndroidNotificationRecord(
                    activityId: activityId, deviceId: deviceId, bundleId: bundleId, tag: tag, islet: text, messageName: push.messageName,
                    receivedAt: tx.now
                ))
            }
            return PushResult(ignored: ignored, strict: app.strictPushes, activityId: activityId, deviceId: deviceId)
        }
    }

    /// Records on the phone a message it could not use, for no activity of its own.
    private static func dropOnPhone(
        _ detail: String, payload: LiveActivityPayload?, deviceId: DeviceID, bundleId: BundleID, in tx: any Transaction
    ) throws -> PushResult.IgnoredPush {
        let record = IgnoredUpdate(
            reason: .invalidPayload, action: payload?.actionName ?? "push", content: nil, timestamp: payload?.timestamp ?? tx.now,
            lastUpdateTimestamp: nil, message: detail
        )
        try tx.append(.updateIgnored(record), bundleId: bundleId, deviceId: deviceId, activityId: nil)
        tx.effects.countPush(ignored: .invalidPayload)
        return PushResult.IgnoredPush(reason: .invalidPayload, detail: detail)
    }
}
