/// A device's Live Activity settings for one app, as in iOS Settings.
public struct AppSettings: Codable, Hashable, Sendable {
    /// The app.
    public var bundleId: BundleID
    /// The device.
    public var deviceId: DeviceID
    /// Whether the app may start activities on the device (`ActivityAuthorizationInfo.areActivitiesEnabled`).
    public var activitiesEnabled: Bool
    /// Whether the app gets the larger push budget (`frequentPushesEnabled`).
    public var frequentUpdates: Bool
    /// The device's push-to-start token for the app (`Activity.pushToStartToken`).
    public var pushToStartToken: String?
    /// An Android phone's FCM registration token for the app (docs/android.md).
    public var fcmToken: String?
    /// An Android phone's Firebase installation ID for the app, once the app opted in to being
    /// reached by it (`fcmInstallationIdEnabled` in `PUT …/settings`; docs/android.md).
    public var fcmInstallationId: String?

    enum CodingKeys: String, CodingKey {
        case bundleId, deviceId = "device", activitiesEnabled, frequentUpdates, pushToStartToken, fcmToken, fcmInstallationId
    }

    /// Creates settings; an app that was never configured on a device is enabled without frequent updates.
    public init(
        bundleId: BundleID, deviceId: DeviceID, activitiesEnabled: Bool = true, frequentUpdates: Bool = false,
        pushToStartToken: String? = nil, fcmToken: String? = nil
    ) {
        self.bundleId = bundleId
        self.deviceId = deviceId
        self.activitiesEnabled = activitiesEnabled
        self.frequentUpdates = frequentUpdates
        self.pushToStartToken = pushToStartToken
        self.fcmToken = fcmToken
    }
}
