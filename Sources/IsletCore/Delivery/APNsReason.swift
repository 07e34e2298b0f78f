/// Apple's reasons for refusing a request, each with the HTTP status Apple answers it with: the
/// one closed set both halves of Islet speak — the APNs endpoint that plays Apple refuses with
/// them, and the sender reads Apple's answers as them (`APNsAnswer`, `Delivery.handle`).
///
/// From Apple's "Handling notification responses from APNs" and the broadcast documents
/// (docs/delivery.md, "Apple's answers"). Some only Apple gives (certificates, which Islet's
/// endpoint does not take; `Shutdown`, `FeatureNotEnabled`).
public enum APNsReason: String, CaseIterable, Hashable, Sendable {
    // 400
    case badCollapseId = "BadCollapseId"
    case badDeviceToken = "BadDeviceToken"
    case badExpirationDate = "BadExpirationDate"
    case badMessageId = "BadMessageId"
    case badPriority = "BadPriority"
    case badTopic = "BadTopic"
    case deviceTokenNotForTopic = "DeviceTokenNotForTopic"
    case duplicateHeaders = "DuplicateHeaders"
    case idleTimeout = "IdleTimeout"
    case invalidPushType = "InvalidPushType"
    case missingDeviceToken = "MissingDeviceToken"
    case missingTopic = "MissingTopic"
    case payloadEmpty = "PayloadEmpty"
    case topicDisallowed = "TopicDisallowed"
    case badRequestPayload = "BadRequestPayload"
    // 400, broadcasts and channels
    case featureNotEnabled = "FeatureNotEnabled"
    case missingChannelId = "MissingChannelId"
    case badChannelId = "BadChannelId"
    case channelNotRegistered = "ChannelNotRegistered"
    case missingPushType = "MissingPushType"
    case badRequestParams = "BadRequestParams"
    case cannotCreateChannelConfig = "CannotCreateChannelConfig"
    // 403
    case badCertificate = "BadCertificate"
    case badCertificateEnvironment = "BadCertificateEnvironment"
    case expiredProviderToken = "ExpiredProviderToken"
    case forbidden = "Forbidden"
    case invalidProviderToken = "InvalidProviderToken"
    case missingProviderToken = "MissingProviderToken"
    case unrelatedKeyIdInToken = "UnrelatedKeyIdInToken"
    case badEnvironmentKeyIdInToken = "BadEnvironmentKeyIdInToken"
    case topicMismatch = "TopicMismatch"
    // Others
    case badPath = "BadPath"
    case methodNotAllowed = "MethodNotAllowed"
    case unregistered = "Unregistered"
    case expiredToken = "ExpiredToken"
    case payloadTooLarge = "PayloadTooLarge"
    case tooManyProviderTokenUpdates = "TooManyProviderTokenUpdates"
    case tooManyRequests = "TooManyRequests"
    case internalServerError = "InternalServerError"
    case serviceUnavailable = "ServiceUnavailable"
    case shutdown = "Shutdown"

    /// The HTTP status Apple answers the reason with.
    public var statusCode: Int {
        switch self {
        case .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden, .invalidProviderToken,
            .missingProviderToken, .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken, .topicMismatch:
            403
        case .badPath: 404
        case .methodNotAllowed: 405
        case .unregistered, .expiredToken: 410
        case .payloadTooLarge: 413
        case .tooManyProviderTokenUpdates, .tooManyRequests: 429
        case .internalServerError: 500
        case .serviceUnavailable, .shutdown: 503
        default: 400
        }
    }

    /// Whether the reason is about the provider's credential rather than the request: every
    /// request made with it would be refused alike, until it is registered again.
    public var refusesCredential: Bool { statusCode == 403 }
}
