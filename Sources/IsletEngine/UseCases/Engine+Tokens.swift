import Foundation
import IsletCore

extension Engine {
    /// Gives an activity a new push token; the old one answers 410 from now on.
    public func rotateToken(of id: ActivityID) async throws -> Outcome {
        try await write { tx in
            var activity = try tx.loadActivity(id, owner: nil)
            guard activity.pushType == .token, activity.state != .dismissed else {
                throw IsletError(.invalidRequest, "Activity \(id) has no push token to rotate (its pushType is not \"token\", or it is dismissed).")
            }
            let transition = try tx.rotateToken(of: &activity)
            return Outcome(activity: activity, transition: transition, created: false)
        }
    }

    /// Gives a device a new push-to-start token for an app; the old one answers 410 from now on.
    /// - Returns: The device's settings for the app, with the new token.
    public func rotatePushToStartToken(deviceId: DeviceID, bundleId: BundleID) async throws -> AppSettings {
        try await write { tx in
            guard try tx.pushToStartToken(deviceId: deviceId, bundleId: bundleId) != nil else {
                throw IsletError(.deviceNotFound, "No device \(deviceId) with app \(bundleId).")
            }
            try tx.issuePushToStartToken(deviceId: deviceId, bundleId: bundleId, announce: true)
            return try tx.settings(deviceId: deviceId, bundleId: bundleId)
        }
    }

    /// Rotates every live activity's token and every push-to-start token: the optional schedule.
    /// - Returns: How many tokens were rotated.
    public func rotateAllTokens() async throws -> Int {
        try await write { tx in
            var rotated = 0
            for var activity in try tx.liveActivitiesWithPushTokens() {
                _ = try tx.rotateToken(of: &activity)
                rotated += 1
            }
            for holder in try tx.pushToStartHolders() {
                try tx.issuePushToStartToken(deviceId: holder.deviceId, bundleId: holder.bundleId, announce: true)
                rotated += 1
            }
            return rotated
        }
    }
}
