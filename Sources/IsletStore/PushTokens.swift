import Foundation
import GRDB
import IsletCore

/// APNs-style tokens: 32 random bytes as 64 hexadecimal characters, recorded in `pushToken` so a
/// push can find its activity or device, and so a retired token answers 410 rather than being
/// unknown.
enum PushTokens {
    static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }.hexEncoded
    }

    /// Records an activity's token.
    static func recordActivityToken(_ activity: Activity, db: Database) throws {
        guard let token = activity.pushToken else { return }
        try db.execute(
            sql: """
                INSERT INTO pushToken (token, kind, activityId, deviceId, bundleId, createdAt)
                VALUES (?, 'activity', ?, ?, ?, ?)
                """,
            arguments: [token, activity.id, activity.deviceId, activity.bundleId, activity.createdAt.timeIntervalSince1970]
        )
    }

    /// Retires every current token of an activity.
    static func retireActivityTokens(_ activityId: ActivityID, reason: String, at date: Date, db: Database) throws {
        try db.execute(
            sql: """
                UPDATE pushToken SET retiredAt = ?, retiredReason = ?
                WHERE kind = 'activity' AND activityId = ? AND retiredAt IS NULL
                """,
            arguments: [date.timeIntervalSince1970, reason, activityId]
        )
    }

    /// Issues a new push-to-start token for an app on a device, retiring the old one. A rotation
    /// is an event; the first token, issued with the app or the device, is simply there.
    @discardableResult
    /// Gives a live activity a new push token, retiring the old one, and records the change.
    ///
    /// - Returns: The transition recorded (a `pushTokenUpdated` event).
    static func rotateActivityToken(
        _ activity: inout Activity, now: Date, db: Database, log: inout EventLog
    ) throws -> Transition {
        try retireActivityTokens(activity.id, reason: "rotated", at: now, db: db)
        activity.pushToken = generate()
        try ActivityRow.save(activity, now: now, in: db)
        try recordActivityToken(activity, db: db)
        var transition = Transition()
        transition.payloads.append(.pushTokenUpdated(PushTokenChange(pushToken: activity.pushToken!)))
        try log.record(transition, of: activity, in: db)
        return transition
    }

    static func issuePushToStart(
        deviceId: DeviceID, bundleId: BundleID, now: Date, db: Database, log: inout EventLog, announce: Bool = true
    ) throws -> String {
        try db.execute(
            sql: """
                UPDATE pushToken SET retiredAt = ?, retiredReason = 'rotated'
                WHERE kind = 'pushToStart' AND deviceId = ? AND bundleId = ? AND retiredAt IS NULL
                """,
            arguments: [now.timeIntervalSince1970, deviceId, bundleId]
        )
        let token = generate()
        try db.execute(
            sql: "INSERT INTO pushToken (token, kind, deviceId, bundleId, createdAt) VALUES (?, 'pushToStart', ?, ?, ?)",
            arguments: [token, deviceId, bundleId, now.timeIntervalSince1970]
        )
        if announce {
            try log.record(
                .pushTokenUpdated(PushTokenChange(pushToken: token, kind: .pushToStart)), bundleId: bundleId,
                deviceId: deviceId, activityId: nil, in: db
            )
        }
        return token
    }

    static func currentPushToStart(deviceId: DeviceID, bundleId: BundleID, db: Database) throws -> String? {
        try String.fetchOne(
            db,
            sql: """
                SELECT token FROM pushToken
                WHERE kind = 'pushToStart' AND deviceId = ? AND bundleId = ? AND retiredAt IS NULL
                """,
            arguments: [deviceId, bundleId]
        )
    }
}

/// What a push token belongs to, as a push finds it.
public enum TokenLookup: Hashable, Sendable {
    /// An activity's current update token.
    case activity(ActivityID, bundleId: BundleID)
    /// A device's current push-to-start token for an app.
    case pushToStart(DeviceID, bundleId: BundleID)
    /// A token that was valid until `at`: rotated, or its activity dismissed.
    case retired(at: Date, reason: String, bundleId: BundleID)
    /// A token this server never issued.
    case unknown
}
