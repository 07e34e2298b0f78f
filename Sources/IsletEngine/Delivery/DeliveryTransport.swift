import Foundation
import IsletCore

/// One APNs request as the sender makes it: where, with which credential, what.
public struct OutboundRequest: Sendable {
    /// Where the request goes.
    public enum Target: Hashable, Sendable {
        /// `POST /3/device/{token}`.
        case device(token: String)
        /// `POST /4/broadcasts/apps/{bundleId}` with `apns-channel-id`.
        case channel(String)
        /// `POST /1/apps/{bundleId}/channels` on the channel-management host: a new channel
        /// with the storage policy (the answer's `channelId`).
        case createChannel(storagePolicy: Int)
        /// `DELETE /1/apps/{bundleId}/channels` with `apns-channel-id`.
        case deleteChannel(String)
    }

    public var credential: StoredCredential
    public var target: Target
    public var bundleId: BundleID
    /// The payload, JSON.
    public var payload: String
    /// `apns-priority`.
    public var priority: Int
    /// `apns-expiration`, when Apple may stop trying.
    public var expiration: Date?
    /// `apns-id` (`apns-request-id` for a broadcast).
    public var apnsId: String

    public init(
        credential: StoredCredential, target: Target, bundleId: BundleID, payload: String, priority: Int, expiration: Date?,
        apnsId: String
    ) {
        self.credential = credential
        self.target = target
        self.bundleId = bundleId
        self.payload = payload
        self.priority = priority
        self.expiration = expiration
        self.apnsId = apnsId
    }
}

/// What came back from one request: Apple's answer (or why there was none), typed
/// (`APNsAnswer`), with what the delivery log shows beside it.
public struct TransportAnswer: Sendable, Hashable {
    /// Apple's answer, or the transport's failure.
    public var answer: APNsAnswer
    /// The `apns-id` Apple answered with.
    public var apnsId: String?
    /// The `apns-channel-id` Apple answered a channel's creation with.
    public var channelId: String?
    /// From the request to the answer.
    public var latency: Duration
    /// Whether the provider token was signed again after Apple refused it, and the request sent
    /// a second time (the answer is then the second one's).
    public var providerTokenRefreshed: Bool

    public init(_ answer: APNsAnswer, apnsId: String? = nil, channelId: String? = nil, latency: Duration, providerTokenRefreshed: Bool = false) {
        self.answer = answer
        self.apnsId = apnsId
        self.channelId = channelId
        self.latency = latency
        self.providerTokenRefreshed = providerTokenRefreshed
    }

    /// The HTTP status; `nil` when there was no answer.
    public var status: Int? { answer.status }
    /// Apple's reason, on a refusal.
    public var reason: String? { answer.reason }
    /// What went wrong, when there was no answer.
    public var failure: TransportFailure? {
        if case .failed(let failure) = answer { return failure }
        return nil
    }
}

/// Sends APNs requests: HTTP/2 to Apple (or any APNs-compatible host), provider tokens signed,
/// reused and refreshed. The engine decides what to send and what an answer means; the
/// transport only sends (IsletDelivery's `APNsTransport` does it over async-http-client).
public protocol DeliveryTransport: Sendable {
    /// Sends one request and returns the answer; never throws: a failure to send is an answer
    /// with no status.
    func send(_ request: OutboundRequest) async -> TransportAnswer

    /// Checks that a credential can be sent with — its address, the authority it trusts, its
    /// key — by the rules the transport applies before every request, so that one it could
    /// never use is refused when it is registered, not at each delivery.
    func check(_ credential: StoredCredential) async throws(IsletError)
}
