import Foundation

/// A request to start an activity, as ActivityKit's `Activity.request(attributes:content:pushType:style:alertConfiguration:start:)`.
///
/// Its `Codable` form is the body of `POST /v1/activities`.
public struct ActivityRequest: Codable, Hashable, Sendable {
    /// The name of the activity's static shape, like an `ActivityAttributes` type's name.
    public var attributesType: String
    /// Static data, fixed for the activity's life.
    public var attributes: JSONValue
    /// The first content.
    public var content: ActivityContent
    /// How it receives remote updates; `nil` for none.
    public var pushType: PushType?
    /// Standard or transient.
    public var style: ActivityStyle
    /// An alert to show when it starts; required with a scheduled `start`, as in ActivityKit.
    public var alert: Alert?
    /// A future start date makes the activity `pending` until then.
    public var start: Date?
    /// The device to show it on.
    public var deviceId: DeviceID
    /// Renew it before its maximum active duration runs out, so it outlasts eight hours
    /// (docs/renewal.md).
    public var renew: Bool
    /// With `renew`: no renewal once this date is reached.
    public var renewUntil: Date?
    /// How it starts: `api` (the default), or `phone` when the app started it on the phone
    /// itself and tells Islet so (IsletKit's `Activity.request`; no push-to-start is sent).
    /// `push-to-start` is Islet's own, for a start a push made.
    public var source: ActivitySource

    enum CodingKeys: String, CodingKey {
        case attributesType, attributes, content, pushType, style, alert, start, deviceId = "device", renew, renewUntil, source
    }

    /// Creates a request; it goes to the default device unless told otherwise.
    public init(
        attributesType: String, attributes: JSONValue = [:], content: ActivityContent, pushType: PushType? = nil,
        style: ActivityStyle = .standard, alert: Alert? = nil, start: Date? = nil, deviceId: DeviceID = .defaultDevice,
        renew: Bool = false, renewUntil: Date? = nil, source: ActivitySource = .api
    ) {
        self.attributesType = attributesType
        self.attributes = attributes
        self.content = content
        self.pushType = pushType
        self.style = style
        self.alert = alert
        self.start = start
        self.deviceId = deviceId
        self.renew = renew
        self.renewUntil = renewUntil
        self.source = source
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        attributesType = try container.decode(String.self, forKey: .attributesType)
        attributes = try container.decodeIfPresent(JSONValue.self, forKey: .attributes) ?? [:]
        content = try container.decode(ActivityContent.self, forKey: .content)
        pushType = try container.decodeIfPresent(PushType.self, forKey: .pushType)
        style = try container.decodeIfPresent(ActivityStyle.self, forKey: .style) ?? .standard
        alert = try container.decodeIfPresent(Alert.self, forKey: .alert)
        start = try container.decodeIfPresent(Date.self, forKey: .start)
        deviceId = try container.decodeIfPresent(DeviceID.self, forKey: .deviceId) ?? .defaultDevice
        renew = try container.decodeIfPresent(Bool.self, forKey: .renew) ?? false
        renewUntil = try container.decodeIfPresent(Date.self, forKey: .renewUntil)
        source = try container.decodeIfPresent(ActivitySource.self, forKey: .source) ?? .api
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(attributesType, forKey: .attributesType)
        try container.encode(attributes, forKey: .attributes)
        try container.encode(content, forKey: .content)
        try container.encodeIfPresent(pushType, forKey: .pushType)
        try container.encode(style, forKey: .style)
        try container.encodeIfPresent(alert, forKey: .alert)
        try container.encodeIfPresent(start, forKey: .start)
        try container.encode(deviceId, forKey: .deviceId)
        if renew { try container.encode(renew, forKey: .renew) }
        try container.encodeIfPresent(renewUntil, forKey: .renewUntil)
        if source != .api { try container.encode(source, forKey: .source) }
    }

    /// Refuses a request whose fields have the right types but impossible values.
    public func validate() throws(IsletError) {
        try Self.validate(attributesType: attributesType)
        guard attributes.objectValue != nil else {
            throw IsletError(.invalidRequest, "attributes must be a JSON object, not \(attributes.typeName).")
        }
        try content.validate()
        if renewUntil != nil, !renew {
            throw IsletError(.invalidRequest, "renewUntil bounds a renewing activity's chain; it needs \"renew\": true.")
        }
        if let renewUntil, !WireFormat.isAcceptedDate(renewUntil.timeIntervalSince1970) {
            throw IsletError(.invalidRequest, "renewUntil must be \(WireFormat.dateRangeText).")
        }
    }

    /// Refuses a source a caller may not claim: `push-to-start` is the one a push makes.
    public func validateCallersSource() throws(IsletError) {
        guard source != .pushToStart else {
            throw IsletError(
                .invalidRequest,
                "source: \"push-to-start\" is how Islet marks a start a push made; a request says \"api\" (the default) or \"phone\" (the app started it on the phone itself)."
            )
        }
    }
}

extension ActivityRequest {
    /// Refuses an activity type's name that is empty or longer than 256 characters, counted as
    /// Unicode scalars (as JSON and the OpenAPI document count them): one rule for starts,
    /// layouts and registered shapes, so a type that can start can also be drawn.
    public static func validate(attributesType name: String) throws(IsletError) {
        guard (1...256).contains(name.unicodeScalars.count) else {
            throw IsletError(.invalidRequest, "attributesType must be a name of 1 to 256 characters.")
        }
    }
}

/// How many live activities an app and a device already hold, and whether the app is allowed:
/// what the rules need to know to accept a new activity.
public struct Occupancy: Hashable, Sendable {
    /// Whether Live Activities are on for the app on the device.
    public var activitiesEnabled: Bool
    /// The app's live (pending, active or stale) activities on the device.
    public var appActivities: Int
    /// All live activities on the device.
    public var deviceActivities: Int

    /// Creates an occupancy.
    public init(activitiesEnabled: Bool, appActivities: Int, deviceActivities: Int) {
        self.activitiesEnabled = activitiesEnabled
        self.appActivities = appActivities
        self.deviceActivities = deviceActivities
    }
}

extension ActivityContent {
    /// Refuses content whose state is not a JSON object or whose relevance is not a number.
    public func validate() throws(IsletError) {
        guard state.objectValue != nil else {
            throw IsletError(.invalidRequest, "content.state must be a JSON object, not \(state.typeName).")
        }
        guard relevanceScore.isFinite else {
            throw IsletError(.invalidRequest, "content.relevanceScore must be a finite number.")
        }
        // Checked here too, not only when a request is decoded: a Swift caller can hand over any `Date`.
        if let staleDate, !WireFormat.isAcceptedDate(staleDate.timeIntervalSince1970) {
            throw IsletError(.invalidRequest, "content.staleDate must be \(WireFormat.dateRangeText).")
        }
    }
}

/// How an activity started, as an `activity.started` webhook says it.
public enum ActivitySource: String, Codable, Hashable, Sendable, CaseIterable {
    /// Through the API (`POST /v1/activities`, `PUT /v1/activities/by-key/{key}`).
    case api
    /// A push to a push-to-start token Islet issued on a device it plays.
    case pushToStart = "push-to-start"
    /// The app started it on the phone and told Islet (`"source": "phone"`; IsletKit's `Activity.request`).
    case phone
}
