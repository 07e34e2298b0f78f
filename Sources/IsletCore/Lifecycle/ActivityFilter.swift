import Foundation

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
    /// Only activities whose id (in any case) or key starts with this.
    public var query: String?
    /// Only activities changed at or after this moment.
    public var updatedSince: Date?
    /// At most this many activities.
    public var limit: Int
    /// Only activities after this place in the listing's order (the previous page's last).
    public var after: ActivityPlace?

    /// Creates a filter.
    public init(
        bundleId: BundleID? = nil, deviceId: DeviceID? = nil, states: Set<ActivityState>? = nil,
        attributesType: String? = nil, query: String? = nil, updatedSince: Date? = nil, limit: Int = 100,
        after: ActivityPlace? = nil
    ) {
        self.bundleId = bundleId
        self.deviceId = deviceId
        self.states = states
        self.attributesType = attributesType
        self.query = query
        self.updatedSince = updatedSince
        self.limit = limit
        self.after = after
    }

    /// The page this filter asks for.
    public var page: PageRequest<ActivityPlace> {
        get { PageRequest(limit: limit, after: after) }
        set {
            limit = newValue.limit
            after = newValue.after
        }
    }
}

/// An activity's place in the listing's order (`Activity.relevanceOrder`), exactly as its store
/// keeps the columns it sorts on: the highest relevance score first, then the earliest start,
/// then the id.
public struct ActivityPlace: Codable, Hashable, Sendable {
    /// The relevance score.
    public var score: Double
    /// When it started (was requested, if it has not), in seconds since 1970.
    public var start: Double
    /// The id.
    public var id: ActivityID

    public init(score: Double, start: Double, id: ActivityID) {
        self.score = score
        self.start = start
        self.id = id
    }

    private enum CodingKeys: String, CodingKey {
        case score = "s", start = "t", id = "i"
    }
}
