import Foundation
import IsletCore

/// `POST /v1/activities`: an `ActivityRequest`, plus the app when the admin key asks.
struct StartActivityBody: Decodable, KnownFields {
    var request: ActivityRequest
    var bundleId: BundleID?

    init(from decoder: any Decoder) throws {
        request = try ActivityRequest(from: decoder)
        bundleId = try decoder.container(keyedBy: AppKey.self).decodeIfPresent(BundleID.self, forKey: .bundleId)
    }

    static let fields: Set<String> = [
        "attributesType", "attributes", "content", "pushType", "style", "alert", "start", "device", "bundleId",
    ]
    static let nestedFields = ["content": contentFields, "alert": alertFields]
}

/// `PUT /v1/activities/by-key/{key}`: the activity to start, or the content to update it with;
/// `end: true` ends it after (with `dismissalPolicy`).
struct StartOrUpdateBody: Decodable, KnownFields {
    var request: ActivityRequest
    var bundleId: BundleID?
    var timestamp: Date?
    var end: DismissalPolicy?

    private enum Keys: String, CodingKey { case bundleId, timestamp, end, dismissalPolicy }

    init(from decoder: any Decoder) throws {
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

    static let fields = StartActivityBody.fields.union(["timestamp", "end", "dismissalPolicy"])
    static let nestedFields = StartActivityBody.nestedFields
}

extension ContentUpdate: KnownFields {
    static let fields: Set<String> = ["content", "alert", "timestamp"]
    static let nestedFields = ["content": contentFields, "alert": alertFields]
}

extension EndRequest: KnownFields {
    static let fields: Set<String> = ["content", "dismissalPolicy", "timestamp"]
    static let nestedFields = ["content": contentFields]
}

/// `POST /v1/apps`.
struct CreateAppBody: Decodable, KnownFields {
    var bundleId: BundleID
    var name: String?

    static let fields: Set<String> = ["bundleId", "name"]
}

/// `POST /v1/devices`.
struct CreateDeviceBody: Decodable, KnownFields {
    var id: DeviceID
    var name: String?

    static let fields: Set<String> = ["id", "name"]
}

/// `PUT /v1/devices/{id}/settings`: one app's settings on the device; absent fields stay as they are.
struct SettingsBody: Decodable, KnownFields {
    var bundleId: BundleID?
    var activitiesEnabled: Bool?
    var frequentUpdates: Bool?

    static let fields: Set<String> = ["bundleId", "activitiesEnabled", "frequentUpdates"]
}

private enum AppKey: String, CodingKey { case bundleId }
