import Foundation
import IsletCore
import Testing

/// FCM's per-device quota (`DeviceQuota`): never more than 240 messages in any minute nor 5,000
/// in any hour, with the clock passed in.
@Suite("FCM's quota on one device")
struct DeviceQuotaTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    /// Sends as fast as the quota allows (each message when `wait` says), and returns the times.
    func sendAsFastAsAllowed(for seconds: TimeInterval) -> [Date] {
        var quota = DeviceQuota.fcmDevice
        var now = t0
        var sent: [Date] = []
        while now.timeIntervalSince(t0) < seconds {
            if let wait = quota.take(at: now) {
                now = now.addingTimeInterval(wait)
            } else {
                sent.append(now)
            }
        }
        return sent
    }

    /// The most messages in any window of `width` seconds.
    func busiest(_ sent: [Date], width: TimeInterval) -> Int {
        var (most, start) = (0, 0)
        for end in sent.indices {
            while sent[end].timeIntervalSince(sent[start]) >= width { start += 1 }
            most = max(most, end - start + 1)
        }
        return most
    }

    @Test func noMinuteEverHoldsMoreThan240NorAnyHourMoreThan5000() {
        let sent = sendAsFastAsAllowed(for: 2 * 3600)
        #expect(busiest(sent, width: 60) <= 240)
        #expect(busiest(sent, width: 3600) <= 5000)
        // And the quota is used, not starved: the hour's burst (1,250) and its steady 3,750 an
        // hour, for two hours.
        #expect(sent.count >= 1_250 + 2 * 3_750 - 2, "\(sent.count) in two hours")
    }

    @Test func aQuietDeviceBurstsThenWaitsWhatRetryAfterSays() throws {
        var quota = DeviceQuota.fcmDevice
        for index in 0..<60 {
            let taken = quota.take(at: t0)
            #expect(taken == nil, "message \(index) of the burst")
        }
        let refused = quota.take(at: t0)
        let wait = try #require(refused)
        #expect(abs(wait - 1.0 / 3) < 1e-9, "then 3 a second: \(wait)")
        // A refused message takes nothing: the next is due as if it had not been tried.
        let early = quota.take(at: t0.addingTimeInterval(0.2))
        #expect(early != nil)
        let onTime = quota.take(at: t0.addingTimeInterval(wait))
        #expect(onTime == nil)
    }

    @Test func aQuietDeviceIsFullAgainAndAClockThatGoesBackRefillsNothing() {
        var quota = DeviceQuota.fcmDevice
        for _ in 0..<60 { _ = quota.take(at: t0) }
        let backwards = quota.take(at: t0.addingTimeInterval(-3600))
        #expect(backwards != nil, "earlier than the last message: no refill")
        #expect(quota.wait(at: t0.addingTimeInterval(60)) == 0)
        for index in 0..<60 {
            let taken = quota.take(at: t0.addingTimeInterval(60))
            #expect(taken == nil, "message \(index) after a minute")
        }
    }

    @Test func limitsBelowOneAreOne() {
        var quota = DeviceQuota(perMinute: 0, perHour: -5)
        let first = quota.take(at: t0)
        let second = quota.take(at: t0)
        #expect(first == nil)
        #expect(second != nil)
    }
}
