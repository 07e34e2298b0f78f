/// Which activities a listing wants: every field left `nil` matches anything.
public struct ActivityFilter: Hashable, Sendable {
    /// Only this app's activities.
    public var bundleId: BundleID?
    /// Only activities on this device.
    public var deviceId: DeviceID?
    /// Only activities in one of these states.
    public var states: Set<ActivityState>?
    /// Only activities of this attributes type.
    public var attributesType: String?
    /// At most this many activities.
    public var limit: Int

    /// Creates a filter.
    public init(
        bundleId: BundleID? = nil, deviceId: DeviceID? = nil, states: Set<ActivityState>? = nil,
        attributesType: String? = nil, limit: Int = 100
    ) {
        self.bundleId = bundleId
        self.deviceId = deviceId
        self.states = states
        self.attributesType = attributesType
        self.limit = limit
    }
}
