import Foundation
import IsletCore

/// `POST /v1/activities`: an `ActivityRequest`, plus the app when the admin key asks.
public struct StartActivityBody: Decodable, KnownFields {
    /// The activity to start.
    public var request: ActivityRequest
    /// The app it is for, when the admin key asks (an app key acts for its own app).
    public var bundleId: BundleID?

    public init(from decoder: any Decoder) throws {
        request = try ActivityRequest(from: decoder)
        bundleId = try decoder.container(keyedBy: AppKey.self).decodeIfPresent(BundleID.self, forKey: .bundleId)
    }

    public static let fields: Set<String> = [
        "attributesType", "attributes", "content", "pushType", "style", "alert", "start", "device", "bundleId",
    ]
    public static let nestedFields = ["content": contentFields, "alert": alertFields, "pushType": pushTypeFields]
}

/// `PUT /v1/activities/by-key/{key}`: the activity to start, or the content to update it with;
/// `end: true` ends it after (with `dismissalPolicy`).
public struct StartOrUpdateBody: Decodable, KnownFields {
    /// The activity to start, whose content also updates a live one.
    public var request: ActivityRequest
    /// The app it is for, when the admin key asks.
    public var bundleId: BundleID?
    /// When the update was produced, as `ContentUpdate.timestamp`.
    public var timestamp: Date?
    /// How the activity leaves the Lock Screen, when the call also ends it.
    public var end: DismissalPolicy?

    private enum Keys: String, CodingKey { case bundleId, timestamp, end, dismissalPolicy }

    public init(from decoder: any Decoder) throws {
        request = try ActivityRequest(from: decoder)
        let container = try decoder.container(keyedBy: Keys.self)
        bundleId = try container.decodeIfPresent(BundleID.self, forKey: .bundleId)
        timestamp = try container.decodeIfPresent(Date.self, forKey: .timestamp)
        let policy = try container.decodeIfPresent(DismissalPolicy.self, forKey: .dismissalPolicy)
        if try container.decodeIfPresent(Bool.self, forKey: .end) ?? false {
            end = policy ?? .default
        } else if policy != nil {
            throw DecodingError.dataCorruptedError(
                forKey: .dismissalPolicy, in: container, debugDescription: "dismissalPolicy only applies with \"end\": true."
            )
        }
    }

    public static let fields = StartActivityBody.fields.union(["timestamp", "end", "dismissalPolicy"])
    public static let nestedFields = StartActivityBody.nestedFields.merging(["dismissalPolicy": dismissalPolicyFields]) { $1 }
}

extension ContentUpdate: KnownFields {
    public static let fields: Set<String> = ["content", "alert", "timestamp"]
    public static let nestedFields = ["content": contentFields, "alert": alertFields]
}

extension EndRequest: KnownFields {
    public static let fields: Set<String> = ["content", "dismissalPolicy", "timestamp"]
    public static let nestedFields = ["content": contentFields, "dismissalPolicy": dismissalPolicyFields]
}

/// `POST /v1/apps`.
public struct CreateAppBody: Decodable, KnownFields {
    /// The app's bundle id.
    public var bundleId: BundleID
    /// A name for people; the bundle id when absent.
    public var name: String?

    public static let fields: Set<String> = ["bundleId", "name"]
}

/// `POST /v1/devices`.
public struct CreateDeviceBody: Decodable, KnownFields {
    /// The device's id.
    public var id: DeviceID
    /// A name for people; the id when absent.
    public var name: String?

    public static let fields: Set<String> = ["id", "name"]
}

/// `PUT /v1/devices/{id}/settings`: one app's settings on the device; absent fields stay as they are.
public struct SettingsBody: Decodable, KnownFields {
    /// The app whose settings change.
    public var bundleId: BundleID?
    /// Whether the app may show Live Activities on the device.
    public var activitiesEnabled: Bool?
    /// Whether the app's pushes get the larger budget.
    public var frequentUpdates: Bool?

    public static let fields: Set<String> = ["bundleId", "activitiesEnabled", "frequentUpdates"]
}

private enum AppKey: String, CodingKey { case bundleId }
