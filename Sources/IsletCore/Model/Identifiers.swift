/// An app's bundle identifier, such as `com.example.bike`: names the producer that owns activities.
public typealias BundleID = String

/// A virtual device's identifier. The `default` device exists from the first start.
public typealias DeviceID = String

/// An activity's identifier: a UUID string, as ActivityKit's `Activity.id`.
public typealias ActivityID = String

/// An event's position in the server's single, increasing event sequence.
public typealias EventID = Int64

extension DeviceID {
    /// The device that exists from the first start and receives activities that name none.
    public static let defaultDevice: DeviceID = "default"
}

/// How a person or a client names an activity: its whole id in any case, or — as `watch` and
/// the tables print them — the first characters of it.
public enum ActivityReference: Hashable, Sendable {
    /// A whole id, in the case the server stores it (upper).
    case id(ActivityID)
    /// The first characters of an id, upper-cased: at least `shortestPrefix` of them.
    case prefix(String)

    /// The fewest characters a prefix may have: enough that a handful of live activities rarely share one.
    public static let shortestPrefix = 4

    /// Reads `text`: hexadecimal digits and hyphens, as a UUID is written.
    public init(_ text: String) throws(IsletError) {
        let upper = text.uppercased()
        guard !upper.isEmpty, upper.utf8.count <= 36, upper.allSatisfy({ $0 == "-" || ($0.isHexDigit && $0.isASCII) }) else {
            throw IsletError(.activityNotFound, "No activity \(text.prefix(64)): an id is a UUID, or its first characters.")
        }
        if upper.utf8.count == 36 {
            self = .id(upper)
        } else {
            guard upper.utf8.count >= Self.shortestPrefix else {
                throw IsletError(
                    .invalidRequest,
                    "\"\(text)\" is too short to name an activity: give its whole id or at least its first \(Self.shortestPrefix) characters."
                )
            }
            self = .prefix(upper)
        }
    }
}
