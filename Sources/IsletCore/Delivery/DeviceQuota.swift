import Foundation
import Synchronization

/// FCM's quota on messages to one Android device — 240 a minute and 5,000 an hour — kept so
/// that no window of a minute ever holds more than 240, nor any window of an hour more than 5,000.
///
/// Each limit is a token bucket whose burst is a quarter of the limit and whose refill is the
/// rest spread over the period: a bucket of burst B refilled at (L − B)/P lets at most
/// B + (L − B) = L messages through in any P seconds. So a quiet device takes 60 at once, then 3
/// a second; and no more than 1,250 at once, then about one a second (3,750 an hour) over hours.
/// The price of never passing FCM's limit is a quarter of it unused at a steady rate, which a
/// Live Update (Android redraws at most about 5 a second per app) does not miss.
///
/// One value serves both sides (docs/android.md): Islet playing Google answers a message over it
/// `429 QUOTA_EXCEEDED` with `Retry-After`, and the sender plans for it, holding a device's next
/// message until it would be taken. The state is two numbers a bucket; the clock is passed in.
public struct DeviceQuota: Hashable, Sendable {
    /// One limit: at most `limit` messages in any `period` seconds.
    public struct Bucket: Hashable, Sendable {
        /// What a quiet device may send at once.
        public let burst: Double
        /// Tokens a second.
        public let rate: Double
        /// Tokens left at `updatedAt`.
        public private(set) var tokens: Double
        public private(set) var updatedAt: Date?

        public init(limit: Int, period: TimeInterval) {
            let limit = Double(max(1, limit))
            burst = max(1, (limit / 4).rounded(.down))
            rate = max(limit - burst, 1) / max(1, period)
            tokens = burst
        }

        /// Tokens at `now`: refilled since the last reading, never above the burst; a clock that
        /// went back refills nothing.
        func available(at now: Date) -> Double {
            guard let updatedAt else { return burst }
            let elapsed = max(0, now.timeIntervalSince(updatedAt))
            return min(burst, tokens + elapsed * rate)
        }

        /// Seconds until a whole token is there (0 when one is). A token short by less than a
        /// microsecond's refill counts as there: waiting for it could not move a `Date`.
        func wait(at now: Date) -> TimeInterval {
            let missing = 1 - available(at: now)
            return missing <= rate * 1e-6 ? 0 : missing / rate
        }

        mutating func take(at now: Date) {
            tokens = available(at: now) - 1
            updatedAt = now
        }
    }

    public private(set) var minute: Bucket
    public private(set) var hour: Bucket

    /// FCM's quota on one Android device.
    public static let fcmDevice = DeviceQuota(perMinute: 240, perHour: 5000)
    /// What the sender keeps each Android phone within: a sixth below FCM's quota, so that the
    /// network bunching messages on their way never takes them past it (measured: at FCM's own
    /// figures, Islet playing Google answered a few 429s to a sender pacing itself exactly).
    public static let fcmSender = DeviceQuota(perMinute: 200, perHour: 4500)

    public init(perMinute: Int, perHour: Int) {
        minute = Bucket(limit: perMinute, period: 60)
        hour = Bucket(limit: perHour, period: 3600)
    }

    /// Seconds until a message would be taken (0: now).
    public func wait(at now: Date) -> TimeInterval {
        max(minute.wait(at: now), hour.wait(at: now))
    }

    /// Takes a message at `now` if the quota has room and returns `nil`; otherwise takes nothing
    /// and returns the seconds to wait (what `Retry-After` says, rounded up to whole seconds).
    public mutating func take(at now: Date) -> TimeInterval? {
        let wait = wait(at: now)
        guard wait <= 0 else { return wait }
        minute.take(at: now)
        hour.take(at: now)
        return nil
    }
}

/// FCM's per-device quota for many phones, one `DeviceQuota` per registration token, kept by one
/// process: Islet playing Google counts what it takes with it, and the sender what it sends.
public final class DeviceQuotas: Sendable {
    private let quotas = Mutex<[String: DeviceQuota]>([:])
    private let fresh: DeviceQuota

    /// - Parameter quota: Each token's quota before anything was taken.
    public init(_ quota: DeviceQuota) {
        fresh = quota
    }

    /// Takes a message for `token` and returns `nil`, or takes nothing and returns the seconds
    /// to wait. Tokens whose quota has filled again are forgotten once there are many.
    public func take(_ token: String, at now: Date) -> TimeInterval? {
        quotas.withLock { quotas in
            if quotas.count > 100_000 { quotas = quotas.filter { $0.value.wait(at: now) > 0 } }
            var quota = quotas[token] ?? fresh
            defer { quotas[token] = quota }
            return quota.take(at: now)
        }
    }
}
