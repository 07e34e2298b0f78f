import Foundation
import IsletCore

/// The steps every use case is made of, written once: load an activity as its owner may see
/// it, let the rules handle an input, keep the result, record its events.
extension StoreReading {
    /// The activity, or `activityNotFound` — also for another app's activity, so an app key
    /// learns nothing about it.
    func loadActivity(_ id: ActivityID, owner: BundleID?) throws -> Activity {
        guard let activity = try activity(id), owner == nil || owner == activity.bundleId else {
            throw IsletError(.activityNotFound, "No activity \(id).")
        }
        return activity
    }

    /// The activity an id stands for: itself, or — once it was renewed — the newest activity of
    /// its chain of renewals, found by following `renewedBy` (docs/renewal.md).
    func loadActivity(following id: ActivityID, owner: BundleID?) throws -> Activity {
        try liveEnd(of: try loadActivity(id, owner: owner))
    }

    /// The newest activity of the chain `activity` is in: itself, unless it was renewed.
    func liveEnd(of activity: Activity) throws -> Activity {
        var activity = activity
        // Each link is written once, to a newer activity: a chain has no loop.
        while let next = activity.renewedBy, let successor = try self.activity(next) {
            activity = successor
        }
        return activity
    }

    /// The app, or `appNotFound`.
    func requireApp(_ bundleId: BundleID) throws -> App {
        guard let app = try app(bundleId) else { throw IsletError(.appNotFound, "No app \(bundleId).") }
        return app
    }

    /// The device, or `deviceNotFound`.
    func requireDevice(_ id: DeviceID) throws -> Device {
        guard let device = try device(id) else { throw IsletError(.deviceNotFound, "No device \(id).") }
        return device
    }
}

extension Transaction {
    /// Lets the rules handle `input` for `activity`, keeps the result and records its events:
    /// load → decide → save → record, the one path of every change to an existing activity.
    ///
    /// - Returns: What the rules did, and the activity as written.
    @discardableResult
    func change(
        _ activity: inout Activity, _ input: Activity.Input, rules: LifecycleRules
    ) throws -> (transition: Transition, body: String) {
        let type = try activityType(bundleId: activity.bundleId, name: activity.attributesType)
        let transition = try activity.handle(input, now: now, rules: rules, type: type)
        let body = try keep(activity)
        try record(transition, of: activity)
        effects.count(transition)
        return (transition, body)
    }

    /// Saves an activity. A dismissed activity's token is unregistered, as an uninstalled app's
    /// would be: pushes to it answer 410 from then on.
    @discardableResult
    func keep(_ activity: Activity) throws -> String {
        if activity.state == .dismissed, activity.pushToken != nil {
            try retireTokens(
                of: .activity(activity.id, deviceId: activity.deviceId, bundleId: activity.bundleId),
                reason: .activityDismissed(at: activity.dismissedAt ?? now)
            )
        }
        return try save(activity)
    }

    /// Records a step's events on the activity.
    func record(_ transition: Transition, of activity: Activity) throws {
        for payload in transition.payloads {
            try append(payload, bundleId: activity.bundleId, deviceId: activity.deviceId, activityId: activity.id)
        }
    }

    /// Issues a device a new push-to-start token for an app, retiring the old one. A rotation is
    /// an event (`announce`); the first token, issued with the app or the device, is simply there.
    @discardableResult
    func issuePushToStartToken(deviceId: DeviceID, bundleId: BundleID, announce: Bool) throws -> String {
        let holder = TokenHolder.pushToStart(deviceId: deviceId, bundleId: bundleId)
        try retireTokens(of: holder, reason: .rotated(at: now))
        let token = Tokens.generate()
        try addToken(token, holder: holder)
        if announce {
            try append(
                .pushTokenUpdated(PushTokenChange(pushToken: token, kind: .pushToStart)), bundleId: bundleId, deviceId: deviceId,
                activityId: nil
            )
        }
        return token
    }

    /// Issues a device the token an app's pushes reach it by: a push-to-start token on an
    /// iPhone, an FCM registration token on an Android phone (replacing any earlier one).
    func issueAppToken(device: Device, bundleId: BundleID) throws {
        switch device.platform {
        case .ios:
            try issuePushToStartToken(deviceId: device.id, bundleId: bundleId, announce: false)
        case .android:
            let holder = TokenHolder.fcm(deviceId: device.id, bundleId: bundleId)
            try retireTokens(of: holder, reason: .rotated(at: now))
            try addToken(Tokens.registration(), holder: holder)
        }
    }

    /// Gives a live activity a new push token, retiring the old one, and records the change.
    func rotateToken(of activity: inout Activity) throws -> Transition {
        let holder = TokenHolder.activity(activity.id, deviceId: activity.deviceId, bundleId: activity.bundleId)
        try retireTokens(of: holder, reason: .rotated(at: now))
        activity.pushToken = Tokens.generate()
        try keep(activity)
        try addToken(activity.pushToken!, holder: holder)
        var transition = Transition()
        transition.payloads.append(.pushTokenUpdated(PushTokenChange(pushToken: activity.pushToken!)))
        try record(transition, of: activity)
        return transition
    }
}

/// Tokens as the push services shape them.
enum Tokens {
    /// APNs's: 32 random bytes as 64 hexadecimal characters.
    static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }.hexEncoded
    }

    /// FCM's registration tokens: an installation id, `:APA91b`, and a long random tail, in
    /// URL-safe base64 (about 160 characters, as Android's are).
    static func registration() -> String {
        randomText(16).prefix(22) + ":APA91b" + randomText(100)
    }

    /// A Firebase installation ID, as the installations SDK makes one: 17 random bytes whose
    /// first four bits are `0111`, in URL-safe base64, cut to 22 characters (`FCMAddress`).
    static func installationId() -> String {
        String(randomText(17) { bytes in bytes[0] = 0x70 | (bytes[0] & 0x0F) }.prefix(FCMAddress.installationIdLength))
    }

    /// `count` random bytes in URL-safe base64 without padding, `shape`d first.
    private static func randomText(_ count: Int, shape: (inout [UInt8]) -> Void = { _ in }) -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
        shape(&bytes)
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
