import Foundation

/// A producer of activities, named by its bundle identifier.
public struct App: Codable, Hashable, Sendable {
    /// The bundle identifier, such as `com.example.bike`.
    public var bundleId: BundleID
    /// A name for people.
    public var name: String
    /// When the app was created.
    public var createdAt: Date
    /// Whether pushes a device would drop silently are refused with `400` and the reason instead:
    /// for a provider's CI, where a silent drop is a failed test.
    public var strictPushes: Bool
    /// Whether delivery to real phones is paused: changes wait in the outbox, held, until it
    /// resumes; the credentials stay (docs/delivery.md).
    public var deliveryPaused: Bool

    /// Creates an app.
    public init(bundleId: BundleID, name: String, createdAt: Date, strictPushes: Bool = false, deliveryPaused: Bool = false) {
        self.bundleId = bundleId
        self.name = name
        self.createdAt = createdAt
        self.strictPushes = strictPushes
        self.deliveryPaused = deliveryPaused
    }

    /// Refuses a bundle identifier iOS would refuse: 1 to 155 characters of letters, digits,
    /// hyphens and periods, not starting or ending with a period.
    public static func validate(bundleId: String) throws(IsletError) {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.")
        guard !bundleId.isEmpty, bundleId.count <= 155, bundleId.allSatisfy(allowed.contains),
            bundleId.first != ".", bundleId.last != ".", !bundleId.contains("..")
        else {
            throw IsletError(
                .invalidRequest,
                "\"\(bundleId)\" is not a bundle identifier: use letters, digits, hyphens and periods, like com.example.bike."
            )
        }
    }
}

/// What a device is: an iPhone (the default) or an Android phone.
public enum DevicePlatform: String, Codable, Hashable, Sendable, CaseIterable {
    /// Pushes reach it through APNs; it shows Live Activities.
    case ios
    /// Messages reach it through FCM; it shows Live Updates (docs/android.md).
    case android
}

/// A virtual phone: it holds activities and per-app Live Activity settings.
public struct Device: Codable, Hashable, Sendable {
    /// The device's identifier, used in URLs.
    public var id: DeviceID
    /// A name for people.
    public var name: String
    /// When the device was created.
    public var createdAt: Date
    /// An iPhone or an Android phone: how pushes reach it and what it draws.
    public var platform: DevicePlatform

    /// Creates a device.
    public init(id: DeviceID, name: String, createdAt: Date, platform: DevicePlatform = .ios) {
        self.id = id
        self.name = name
        self.createdAt = createdAt
        self.platform = platform
    }

    enum CodingKeys: String, CodingKey {
        case id, name, createdAt, platform
    }

    /// Reads a device; one written before Android phones is an iPhone.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(DeviceID.self, forKey: .id)
        name = try container.decode(String.self, forKey: .name)
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        platform = try container.decodeIfPresent(DevicePlatform.self, forKey: .platform) ?? .ios
    }

    /// Refuses a device identifier that would not read well in a URL: 1 to 64 characters of
    /// letters, digits, hyphens, underscores and periods, not `.` or `..` (which every browser
    /// and HTTP client resolves away, so such a device's addresses would never reach it).
    public static func validate(id: String) throws(IsletError) {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
        guard !id.isEmpty, id.count <= 64, id.allSatisfy(allowed.contains), id != ".", id != ".." else {
            throw IsletError(
                .invalidRequest,
                "\"\(id)\" is not a device id: use 1 to 64 letters, digits, hyphens, underscores or periods (not . or ..)."
            )
        }
    }
}
