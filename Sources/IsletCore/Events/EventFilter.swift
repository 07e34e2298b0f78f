/// Which events a subscriber or a query wants: every field left `nil` matches anything.
public struct EventFilter: Hashable, Sendable {
    /// Only this app's events.
    public var bundleId: BundleID?
    /// Only this device's events.
    public var deviceId: DeviceID?
    /// Only this activity's events.
    public var activityId: ActivityID?

    /// Creates a filter.
    public init(bundleId: BundleID? = nil, deviceId: DeviceID? = nil, activityId: ActivityID? = nil) {
        self.bundleId = bundleId
        self.deviceId = deviceId
        self.activityId = activityId
    }

    /// Whether `event` passes the filter.
    public func matches(_ event: EncodedEvent) -> Bool {
        (bundleId == nil || bundleId == event.bundleId)
            && (deviceId == nil || deviceId == event.deviceId)
            && (activityId == nil || activityId == event.activityId)
    }
}
