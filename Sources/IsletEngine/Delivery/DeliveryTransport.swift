import Foundation
import IsletCore
import Logging

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
    /// `apns-collapse-id`: on a push-to-start, the activity's id, so that a start sent again
    /// (its answer lost to a crash) shows as the one card it is.
    public var collapseId: String?

    public init(
        credential: StoredCredential, target: Target, bundleId: BundleID, payload: String, priority: Int, expiration: Date?,
        apnsId: String, collapseId: String? = nil
    ) {
        self.collapseId = collapseId
        self.credential = credential
        self.target = target
        self.bundleId = bundleId
        self.payload = payload
        self.priority = priority
        self.expiration = expiration
        self.apnsId = apnsId
    }
}

/// One FCM request as the sender makes it (docs/android.md): a data message to a registration
/// token, with the app's service account.
public struct FCMRequest: Sendable {
    public var credential: StoredFCMCredential
    /// Where FCM delivers it: the phone's registration token or installation ID for the app.
    public var address: FCMAddress
    /// `data.islet`, as the change's delivery stored it.
    public var islet: String
    /// The activity: the message's `collapse_key`.
    public var activityId: ActivityID
    /// How long FCM may keep the message, in seconds (`android.ttl`).
    public var ttl: TimeInterval

    public init(credential: StoredFCMCredential, address: FCMAddress, islet: String, activityId: ActivityID, ttl: TimeInterval) {
        self.credential = credential
        self.address = address
        self.islet = islet
        self.activityId = activityId
        self.ttl = ttl
    }
}

/// A delivery's request: to Apple or to Google.
public enum Outbound: Sendable {
    case apns(OutboundRequest)
    case fcm(FCMRequest)
}

/// What came back from one request: Apple's or FCM's answer (or why there was none), typed
/// (`APNsAnswer`, `FCMAnswer`), with what the delivery log shows beside it.
public struct TransportAnswer: Sendable, Hashable {
    /// The answer, from Apple or from FCM.
    public enum Reply: Sendable, Hashable {
        case apns(APNsAnswer)
        case fcm(FCMAnswer)
    }

    public var reply: Reply
    /// Apple's answer, or the transport's failure (an FCM reply's failure, if it is one).
    public var answer: APNsAnswer {
        switch reply {
        case .apns(let answer): answer
        case .fcm(.failed(let failure)): .failed(failure)
        case .fcm: .failed(TransportFailure(.other, "FCM answered, not Apple"))
        }
    }
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
        self.reply = .apns(answer)
        self.apnsId = apnsId
        self.channelId = channelId
        self.latency = latency
        self.providerTokenRefreshed = providerTokenRefreshed
    }

    /// FCM's answer, and whether a new access token was fetched after a `401` (the answer is
    /// then the second request's).
    public init(fcm answer: FCMAnswer, latency: Duration, accessTokenRenewed: Bool = false) {
        self.reply = .fcm(answer)
        self.latency = latency
        self.providerTokenRefreshed = accessTokenRenewed
    }

    /// The HTTP status; `nil` when there was no answer.
    public var status: Int? {
        switch reply {
        case .apns(let answer): answer.status
        case .fcm(let answer): answer.status
        }
    }
    /// Apple's reason, or FCM's error code (its status text when it gives none), on a refusal.
    public var reason: String? {
        switch reply {
        case .apns(let answer): answer.reason
        case .fcm(.refused(let refusal)): refusal.errorCodeText ?? refusal.googleStatus
        case .fcm: nil
        }
    }
    /// The name FCM gave an accepted message.
    public var messageName: String? {
        if case .fcm(.accepted(let name)) = reply { return name }
        return nil
    }
    /// What went wrong, when there was no answer.
    public var failure: TransportFailure? {
        switch reply {
        case .apns(.failed(let failure)), .fcm(.failed(let failure)): failure
        default: nil
        }
    }
}

/// Sends deliveries' requests: HTTP/2 to Apple (or any APNs-compatible host) and to FCM, provider
/// and access tokens fetched, reused and refreshed. The engine decides what to send and what an
/// answer means; the transport only sends (IsletDelivery's `PushServiceTransport` does it over
/// async-http-client).
public protocol DeliveryTransport: Sendable {
    /// Sends one request and returns the answer; never throws: a failure to send is an answer
    /// with no status.
    func send(_ request: OutboundRequest) async -> TransportAnswer

    /// Checks that a credential can be sent with — its address, the authority it trusts, its
    /// key — by the rules the transport applies before every request, so that one it could
    /// never use is refused when it is registered, not at each delivery.
    func check(_ credential: StoredCredential) async throws(IsletError)

    /// Sends one FCM request (access tokens fetched, reused, and fetched anew once on a `401`);
    /// never throws.
    func send(_ request: FCMRequest) async -> TransportAnswer

    /// Checks that an FCM credential can be sent with: its addresses, the authority it trusts.
    func check(_ credential: StoredFCMCredential) async throws(IsletError)

    /// Sends a sender's batch at once, and calls `answered` with each request's place in
    /// `requests` and its answer as it comes, once each, from any thread; never throws.
    func send(_ requests: [Outbound], answered: @escaping @Sendable (Int, TransportAnswer) -> Void)
}

/// What a server's transport is made with: from `delivery.*` and the server's logger.
public struct TransportOptions: Sendable {
    /// The longest one request may take (`DeliverySettings.requestTimeout`).
    public var timeout: Duration
    /// HTTP/2 connections per host and trusted authority (`delivery.connections`).
    public var connections: Int
    public var logger: Logger

    public init(timeout: Duration, connections: Int, logger: Logger) {
        self.timeout = timeout
        self.connections = connections
        self.logger = logger
    }
}

/// Makes the transport a server sends with: the composition root's choice (the `islet` command
/// hands IsletDelivery's), as `StoreOpener` is for the store.
public typealias TransportOpener = @Sendable (TransportOptions) -> any DeliveryTransport

extension DeliveryTransport {
    /// A transport that speaks APNs only: nothing goes to FCM.
    public func send(_ request: FCMRequest) async -> TransportAnswer {
        TransportAnswer(fcm: .failed(TransportFailure(.unusableCredential, "this server's transport does not send to FCM")), latency: .zero)
    }

    public func check(_ credential: StoredFCMCredential) async throws(IsletError) {}

    /// A sender's batch, a task per request: a transport that can write a batch at once does.
    public func send(_ requests: [Outbound], answered: @escaping @Sendable (Int, TransportAnswer) -> Void) {
        for (index, request) in requests.enumerated() {
            Task { answered(index, await send(request)) }
        }
    }

    /// Sends a delivery's request where it goes.
    public func send(_ outbound: Outbound) async -> TransportAnswer {
        switch outbound {
        case .apns(let request): await send(request)
        case .fcm(let request): await send(request)
        }
    }
}
