/// How an activity receives remote updates, as ActivityKit's `PushType`.
///
/// On the wire: `null` (no pushes), `"token"` or `{"channel": "<base64 id>"}`.
public enum PushType: Hashable, Sendable {
    /// The activity gets its own push token.
    case token
    /// The activity receives a broadcast channel's pushes.
    case channel(String)
}

extension PushType: Codable {
    private enum Keys: String, CodingKey { case channel }

    public init(from decoder: any Decoder) throws {
        if let name = try? decoder.singleValueContainer().decode(String.self) {
            guard name == "token" else {
                throw DecodingError.dataCorrupted(.init(
                    codingPath: decoder.codingPath,
                    debugDescription: "Expected null, \"token\" or {\"channel\": \"<id>\"}, got \"\(name)\"."
                ))
            }
            self = .token
            return
        }
        let container = try decoder.container(keyedBy: Keys.self)
        self = .channel(try container.decode(String.self, forKey: .channel))
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .token:
            var container = encoder.singleValueContainer()
            try container.encode("token")
        case .channel(let id):
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(id, forKey: .channel)
        }
    }
}
