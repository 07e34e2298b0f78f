import Foundation

/// An update to a running activity, as ActivityKit's `update(_:alertConfiguration:timestamp:)`.
///
/// Its `Codable` form is the body of `POST /v1/activities/{id}/update`.
public struct ContentUpdate: Codable, Hashable, Sendable {
    /// The new content.
    public var content: ActivityContent
    /// An alert to show with it.
    public var alert: Alert?
    /// When the update was produced; an update older than the last applied one is ignored.
    /// Without one, the server's time of arrival is used.
    public var timestamp: Date?

    /// Creates an update.
    public init(content: ActivityContent, alert: Alert? = nil, timestamp: Date? = nil) {
        self.content = content
        self.alert = alert
        self.timestamp = timestamp
    }
}

/// A request to end an activity, as ActivityKit's `end(_:dismissalPolicy:timestamp:)`.
///
/// Its `Codable` form is the body of `POST /v1/activities/{id}/end`.
public struct EndRequest: Codable, Hashable, Sendable {
    /// The final content, if it changes.
    public var content: ActivityContent?
    /// When the ended activity leaves the Lock Screen.
    public var dismissalPolicy: DismissalPolicy
    /// When the end was produced; an older final content is not applied, but the end is.
    public var timestamp: Date?

    /// Creates an end request.
    public init(content: ActivityContent? = nil, dismissalPolicy: DismissalPolicy = .default, timestamp: Date? = nil) {
        self.content = content
        self.dismissalPolicy = dismissalPolicy
        self.timestamp = timestamp
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        content = try container.decodeIfPresent(ActivityContent.self, forKey: .content)
        dismissalPolicy = try container.decodeIfPresent(DismissalPolicy.self, forKey: .dismissalPolicy) ?? .default
        timestamp = try container.decodeIfPresent(Date.self, forKey: .timestamp)
    }
}
