import Foundation

/// When an ended activity leaves the Lock Screen, as ActivityKit's `ActivityUIDismissalPolicy`.
///
/// On the wire: `"default"`, `"immediate"` or `{"after": <Unix seconds>}`.
public enum DismissalPolicy: Hashable, Sendable {
    /// The system keeps the ended activity for up to the dismissal window (4 hours).
    case `default`
    /// The activity is dismissed as soon as it ends.
    case immediate
    /// Dismissed at the earlier of this date and the end of the dismissal window.
    case after(Date)

    /// The policy the Scripting app's `dismissTimeInterval` means: absent is `default`,
    /// zero or less is `immediate`, otherwise that many seconds after `now`.
    public static func fromDismissTimeInterval(_ seconds: Double?, now: Date) -> DismissalPolicy {
        guard let seconds else { return .default }
        return seconds <= 0 ? .immediate : .after(now.addingTimeInterval(seconds))
    }
}

extension DismissalPolicy: Codable {
    private enum Keys: String, CodingKey { case after }

    public init(from decoder: any Decoder) throws {
        if let name = try? decoder.singleValueContainer().decode(String.self) {
            switch name {
            case "default": self = .default
            case "immediate": self = .immediate
            default:
                throw DecodingError.dataCorrupted(.init(
                    codingPath: decoder.codingPath,
                    debugDescription: "Expected \"default\", \"immediate\" or {\"after\": <Unix seconds>}, got \"\(name)\"."
                ))
            }
            return
        }
        let container = try decoder.container(keyedBy: Keys.self)
        self = .after(try container.decode(Date.self, forKey: .after))
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .default:
            var container = encoder.singleValueContainer()
            try container.encode("default")
        case .immediate:
            var container = encoder.singleValueContainer()
            try container.encode("immediate")
        case .after(let date):
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(date, forKey: .after)
        }
    }
}
