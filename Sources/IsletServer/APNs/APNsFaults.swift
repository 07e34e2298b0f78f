import Foundation
import Hummingbird
import IsletAPNs
import IsletCore
import NIOCore
import Synchronization

// Apple's failures, played so that providers — Islet's own sender and anyone else's — can be
// tested against them (docs/apns.md, "Apple's failures"): faults on purpose, the per-token
// request limit, and the limit on provider-token updates per connection.

/// The share of pushes answered with each of Apple's failures instead of being applied:
/// `apns.faults`, written `500=0.1, 503=0.05, 429=0.05, close=0.02`. None by default.
public struct APNsFaults: Equatable, Sendable, CustomStringConvertible {
    /// A failure Apple's servers give.
    public enum Kind: String, CaseIterable, Sendable {
        /// `500 InternalServerError`.
        case internalServerError = "500"
        /// `503 ServiceUnavailable`.
        case serviceUnavailable = "503"
        /// `429 TooManyRequests`.
        case tooManyRequests = "429"
        /// The connection closed under the request, with every stream on it.
        case close
    }

    /// The share of pushes each kind takes, between 0 and 1; together at most 1.
    public private(set) var shares: [Kind: Double] = [:]

    /// No faults.
    public init() {}

    /// Reads `kind=share` pairs separated by commas; the shares add up to at most 1.
    public init(parsing text: String) throws(ParseFailure) {
        for pair in text.split(separator: ",") where !pair.allSatisfy(\.isWhitespace) {
            let parts = pair.split(separator: "=", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, let kind = Kind(rawValue: parts[0].lowercased()) else {
                throw ParseFailure("\"\(pair.trimmingCharacters(in: .whitespaces))\" is not kind=share with a kind of \(Kind.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            guard let share = Double(parts[1]), share.isFinite, (0...1).contains(share) else {
                throw ParseFailure("the share of \(kind.rawValue) must be a number from 0 to 1, such as 0.1; \"\(parts[1])\" is not")
            }
            guard shares[kind] == nil else { throw ParseFailure("\(kind.rawValue) is given twice") }
            shares[kind] = share
        }
        guard total <= 1 + 1e-9 else { throw ParseFailure("the shares add up to \(total), more than 1") }
    }

    /// The share of pushes that fail.
    public var total: Double { shares.values.reduce(0, +) }

    /// The fault a draw from `0..<1` falls on, if any.
    func fault(at draw: Double) -> Kind? {
        var upTo = 0.0
        for kind in Kind.allCases {
            upTo += shares[kind] ?? 0
            if draw < upTo { return kind }
        }
        return nil
    }

    public var description: String {
        Kind.allCases.compactMap { kind in shares[kind].map { "\(kind.rawValue)=\($0)" } }.joined(separator: ", ")
    }

    /// Why a faults setting could not be read.
    public struct ParseFailure: Error, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }
}

/// Answers a share of pushes (`POST /3/device/…`, `POST /4/broadcasts/…`) with one of Apple's
/// failures before anything else looks at them: the push is not applied.
struct APNsFaultMiddleware: RouterMiddleware {
    typealias Context = APNsRequestContext
    let faults: APNsFaults

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let path = request.uri.path
        guard request.method == .post, path.hasPrefix("/3/device/") || path.hasPrefix("/4/broadcasts/"),
            let fault = faults.fault(at: Double.random(in: 0..<1))
        else { return try await next(request, context) }
        let detail = "a fault played on purpose (apns.faults: \(faults))"
        switch fault {
        case .internalServerError: throw APNsError.internalServerError(detail)
        case .serviceUnavailable: throw APNsError.serviceUnavailable(detail)
        case .tooManyRequests: throw APNsError.tooManyRequests(detail)
        case .close:
            context.connection?.close(promise: nil)
            throw APNsError.serviceUnavailable(detail)
        }
    }
}

/// Apple's `TooManyRequests` for one token: at most `perMinute` pushes a minute to a token,
/// with bursts up to the same number (a bucket refilled continuously).
final class TokenRateLimit: Sendable {
    let perMinute: Int
    private struct Bucket {
        var level: Double
        var at: Date
    }
    private struct Buckets {
        var byToken: [String: Bucket] = [:]
        /// When this many tokens are held, buckets that have filled up again are forgotten; then
        /// twice as many as are left, so pruning stays rare however many tokens are busy.
        var pruneAt = 65_536
    }
    private let buckets = Mutex(Buckets())

    init(perMinute: Int) {
        self.perMinute = perMinute
    }

    /// Takes one push from the token's bucket, or refuses with 429 when it is empty.
    func take(_ token: String, now: Date) throws(APNsError) {
        guard perMinute > 0 else { return }
        let capacity = Double(perMinute), perSecond = capacity / 60
        let allowed = buckets.withLock { buckets -> Bool in
            if buckets.byToken.count >= buckets.pruneAt {
                buckets.byToken = buckets.byToken.filter { min(capacity, $0.value.level + now.timeIntervalSince($0.value.at) * perSecond) < capacity }
                buckets.pruneAt = max(65_536, 2 * buckets.byToken.count)
            }
            var bucket = buckets.byToken[token] ?? Bucket(level: capacity, at: now)
            bucket.level = min(capacity, bucket.level + max(0, now.timeIntervalSince(bucket.at)) * perSecond)
            bucket.at = now
            defer { buckets.byToken[token] = bucket }
            guard bucket.level >= 1 else { return false }
            bucket.level -= 1
            return true
        }
        guard allowed else {
            throw APNsError.tooManyRequests("More than \(perMinute) pushes a minute to this token (apns.tokenRateLimit).")
        }
    }
}

/// Apple's `TooManyProviderTokenUpdates`: a connection's provider token (a new `iat` for a key)
/// may change once per `interval` (Apple: 20 minutes). The first token on a connection is free.
final class ProviderTokenUpdates: Sendable {
    let interval: TimeInterval
    private struct Current {
        var issuedAt: Date
        var since: Date
    }
    /// Per connection, per key id.
    private let connections = Mutex<[ObjectIdentifier: [String: Current]]>([:])

    init(interval: TimeInterval) {
        self.interval = interval
    }

    /// Notes the token a connection's request carried, refusing a change that comes too soon.
    func check(_ identity: ProviderIdentity, on connection: (any Channel)?, now: Date) throws(APNsError) {
        guard interval > 0, let connection else { return }
        let id = ObjectIdentifier(connection)
        let (refusedAfter, isNew) = connections.withLock { connections -> (TimeInterval?, Bool) in
            let isNew = connections[id] == nil
            var keys = connections[id] ?? [:]
            defer { connections[id] = keys }
            guard let current = keys[identity.keyId] else {
                keys[identity.keyId] = Current(issuedAt: identity.issuedAt, since: now)
                return (nil, isNew)
            }
            guard current.issuedAt != identity.issuedAt else { return (nil, isNew) }
            let held = now.timeIntervalSince(current.since)
            guard held >= interval else { return (held, isNew) }
            keys[identity.keyId] = Current(issuedAt: identity.issuedAt, since: now)
            return (nil, isNew)
        }
        if isNew {
            connection.closeFuture.whenComplete { [weak self] _ in
                _ = self?.connections.withLock { $0.removeValue(forKey: id) }
            }
        }
        if let held = refusedAfter {
            throw APNsError.tooManyProviderTokenUpdates(
                "Key \(identity.keyId)'s provider token changed \(Int(held)) s after the last change on this connection; Apple allows one change every \(DurationText.text(interval)) (reuse a token for 20 to 60 minutes)."
            )
        }
    }
}
