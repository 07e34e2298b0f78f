/// Apple's token signing keys as they stand since 2025 (docs/delivery.md, "Key sets"): a
/// **team-scoped** key signs for every topic of its team in one environment, at most two per
/// environment; a **topic-specific** key signs for the topics (bundle ids) it names, up to 400,
/// at most 200 such keys per environment, each with at most one related key. A key made before
/// these kinds (a legacy key) signs for every topic in both environments; Islet registers it as a
/// team key in each environment it serves.
public enum KeyScope: String, Codable, Hashable, Sendable, CaseIterable {
    case team, topic
}

/// The rules of a set of keys — the limits a new key must fit in, and which key signs — in one
/// place, for the sender (an app's delivery keys) and for Islet playing Apple (the provider keys
/// it checks tokens with).
public enum KeySet {
    /// Team-scoped keys per team and environment.
    public static let maximumTeamKeys = 2
    /// Topic-specific keys per team and environment.
    public static let maximumTopicKeys = 200
    /// Topics one topic-specific key may name.
    public static let maximumTopics = 400

    /// One key already in the set, as the limits count it.
    public struct Member: Hashable, Sendable {
        public var keyId: String
        public var scope: KeyScope

        public init(keyId: String, scope: KeyScope) {
            self.keyId = keyId
            self.scope = scope
        }
    }

    /// Refuses a key that would pass Apple's limits in its environment: a third team key, a
    /// 201st topic key, more than 400 topics, none, or a related key that is itself. A key
    /// with an id already in the set replaces it, so it is not counted twice.
    ///
    /// - Parameters:
    ///   - keyId: The key being added.
    ///   - scope: Its kind.
    ///   - topics: A topic key's topics (bundle ids); ignored for a team key.
    ///   - relatedKeyId: A topic key's related key, if any.
    ///   - members: The keys of the same team and environment already registered.
    public static func check(
        adding keyId: String, scope: KeyScope, topics: [String], relatedKeyId: String?, to members: [Member]
    ) throws(IsletError) {
        let others = Set(members.filter { $0.keyId != keyId && $0.scope == scope }.map(\.keyId))
        switch scope {
        case .team:
            guard others.count < maximumTeamKeys else {
                throw IsletError(
                    .tooManyKeys,
                    "An environment holds at most \(maximumTeamKeys) team-scoped keys, and has \(others.sorted().joined(separator: " and ")): revoke one first (a rotation adds the new key, moves to it, then revokes the old)."
                )
            }
            guard relatedKeyId == nil else {
                throw IsletError(.invalidRequest, "relatedKeyId belongs to a topic-specific key; a team-scoped key has none.")
            }
        case .topic:
            guard others.count < maximumTopicKeys else {
                throw IsletError(.tooManyKeys, "An environment holds at most \(maximumTopicKeys) topic-specific keys.")
            }
            guard !topics.isEmpty, topics.count <= maximumTopics else {
                throw IsletError(.invalidRequest, "A topic-specific key names 1 to \(maximumTopics) topics (bundle ids); this one names \(topics.count).")
            }
            guard relatedKeyId != keyId else {
                throw IsletError(.invalidRequest, "A key is not its own related key.")
            }
        }
    }

    /// Of an environment's keys, the one that signs: the newest that Apple has not refused
    /// (a rotation adds a key and it signs from then on; one Apple refuses leaves the signing to
    /// the one before it). `nil` when every key is refused, or there is none.
    public static func signer<Key>(_ keys: [Key], createdAt: (Key) -> Double, keyId: (Key) -> String, refused: (Key) -> Bool) -> Key? {
        keys.filter { !refused($0) }.max { a, b in
            createdAt(a) != createdAt(b) ? createdAt(a) < createdAt(b) : keyId(a) < keyId(b)
        }
    }
}
