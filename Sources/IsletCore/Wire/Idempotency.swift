import Foundation

/// `Idempotency-Key` (docs/audiences.md, "Exactly once under retries"): a caller's key for one
/// logical request, kept a day with a digest of the request and, once answered, the answer.
public enum Idempotency {
    /// The header's name.
    public static let header = "Idempotency-Key"
    /// How long a key is kept.
    public static let lifetime: TimeInterval = 86_400
    /// The longest key, in bytes.
    public static let maximumKey = 255

    /// Checks a key where it enters: 1 to 255 printable ASCII characters.
    public static func check(_ key: String) throws(IsletError) {
        guard !key.isEmpty, key.utf8.count <= maximumKey, key.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw IsletError(.invalidRequest, "\(header): 1 to \(maximumKey) printable ASCII characters, no spaces.")
        }
    }
}

/// A kept `Idempotency-Key`: whose, the request's digest, which request holds it, whether its
/// answer is kept, and the answer.
public struct IdempotencyRecord: Hashable, Sendable {
    /// How far the request holding the key got.
    public enum State: String, Hashable, Sendable {
        /// Its change committed (the key was written in the change's transaction): it is never
        /// done again, and its answer is on the way.
        case applied
        /// Its answer is kept: a retry gets it.
        case answered
    }

    /// The caller: `admin`, `app:<bundleId>`, `device:<id>` or `keyless`.
    public var scope: String
    public var key: String
    /// SHA-256 of the method, the path with its query, and the body, in hex.
    public var digest: String
    /// The request that holds the key (a random id of its own).
    public var holder: String
    public var state: State
    /// The answer, once kept.
    public var status: Int?
    public var contentType: String?
    public var body: String?
    public var createdAt: Date

    public init(
        scope: String, key: String, digest: String, holder: String, state: State, status: Int? = nil, contentType: String? = nil,
        body: String? = nil, createdAt: Date
    ) {
        self.scope = scope
        self.key = key
        self.digest = digest
        self.holder = holder
        self.state = state
        self.status = status
        self.contentType = contentType
        self.body = body
        self.createdAt = createdAt
    }
}
