import Foundation

/// What an activity shows right now, as ActivityKit's `ActivityContent`.
public struct ActivityContent: Codable, Hashable, Sendable {
    /// The content state: the JSON an app's `ContentState` encodes to.
    public var state: JSONValue
    /// When the content becomes out of date; the activity turns `stale` then.
    public var staleDate: Date?
    /// Relative importance among the device's activities: the highest leads the Dynamic Island.
    public var relevanceScore: Double

    /// Creates content; the relevance score defaults to 0 as in ActivityKit.
    public init(state: JSONValue, staleDate: Date? = nil, relevanceScore: Double = 0) {
        self.state = state
        self.staleDate = staleDate
        self.relevanceScore = relevanceScore
    }

    enum CodingKeys: String, CodingKey {
        case state, staleDate, relevanceScore
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        state = try container.decode(JSONValue.self, forKey: .state)
        staleDate = try container.decodeIfPresent(Date.self, forKey: .staleDate)
        relevanceScore = try container.decodeIfPresent(Double.self, forKey: .relevanceScore) ?? 0
    }
}
