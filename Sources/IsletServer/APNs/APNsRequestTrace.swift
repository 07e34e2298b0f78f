import IsletAPNs
import IsletCore
import IsletEngine
import Synchronization

/// What the APNs routes learn of a request that its line in the log shows: the provider
/// identity its token verified as, and what a push Islet took did on the devices it reached.
/// Each request's context holds one; the routes fill it as they go, and `APNsRequestRecorder`
/// reads it once the request is answered.
final class APNsRequestTrace: Sendable {
    private struct State {
        var identity: ProviderIdentity?
        var outcomes: [APNsRequestEntry.Outcome]?
        var reached: Int?
    }

    private let state = Mutex(State())

    /// A broadcast's outcomes kept in its entry: the first this many activities it reached.
    static let outcomesKept = 20

    /// The request's provider token verified as `identity`.
    func verified(_ identity: ProviderIdentity) {
        state.withLock { $0.identity = identity }
    }

    /// A push to a device token did `result` on its device.
    func pushed(_ result: PushResult) {
        let outcome = APNsRequestEntry.Outcome(
            activityId: result.activityId, device: result.deviceId, dropped: result.ignored?.reason, message: result.ignored?.detail
        )
        state.withLock { $0.outcomes = [outcome] }
    }

    /// A broadcast reached these activities, applied or dropped.
    func broadcast(_ reached: [Outcome]) {
        let outcomes = reached.prefix(Self.outcomesKept).map { reached in
            APNsRequestEntry.Outcome(
                activityId: reached.activity.id, device: reached.activity.deviceId, dropped: reached.transition.ignored,
                message: reached.transition.ignored == nil ? nil : reached.transition.ignoredMessage
            )
        }
        state.withLock { state in
            state.outcomes = outcomes
            state.reached = reached.count
        }
    }

    /// The app a request that names `bundleId` is attributed to: that app, when the request's
    /// provider token verified for it; otherwise none.
    func app(named bundleId: BundleID?) -> BundleID? {
        state.withLock { state in
            guard let bundleId, state.identity?.bundleIds.contains(bundleId) == true else { return nil }
            return bundleId
        }
    }

    /// What the push did, as the entry shows it.
    var pushed: (outcomes: [APNsRequestEntry.Outcome]?, reached: Int?) {
        state.withLock { ($0.outcomes, $0.reached) }
    }
}
