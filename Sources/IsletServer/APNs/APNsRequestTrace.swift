import IsletAPNs
import IsletCore
import Synchronization

/// What the APNs routes learn of a request that its line in the log shows: the provider
/// identity its token verified as. Each request's context holds one; the routes fill it as they
/// go, and `APNsRequestRecorder` reads it once the request is answered.
final class APNsRequestTrace: Sendable {
    private struct State {
        var identity: ProviderIdentity?
    }

    private let state = Mutex(State())

    /// The request's provider token verified as `identity`.
    func verified(_ identity: ProviderIdentity) {
        state.withLock { $0.identity = identity }
    }

    /// The app a request that names `bundleId` is attributed to: that app, when the request's
    /// provider token verified for it; otherwise none.
    func app(named bundleId: BundleID?) -> BundleID? {
        state.withLock { state in
            guard let bundleId, state.identity?.bundleIds.contains(bundleId) == true else { return nil }
            return bundleId
        }
    }
}
