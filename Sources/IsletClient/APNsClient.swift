import AsyncHTTPClient
import Foundation
import IsletCore
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// A minimal APNs provider client: sends Live Activity pushes, broadcasts and channel requests
/// over HTTP/2 to Islet's APNs-compatible endpoint — or to any server that speaks APNs.
public struct APNsClient: Sendable {
    /// An APNs response: status, `apns-id`, and Apple's reason and timestamp on refusal.
    public struct Response: Sendable, CustomStringConvertible {
        /// The HTTP status.
        public var status: Int
        /// The `apns-id` (or `apns-request-id`) the server answered with.
        public var requestId: String?
        /// `apns-channel-id`, when a channel was created.
        public var channelId: String?
        /// Apple's reason, when refused.
        public var reason: String?
        /// For 410: when the token stopped being valid (milliseconds since 1970).
        public var timestamp: Int64?
        /// Islet's `islet-detail` header: the refusal in words (absent from Apple's answers).
        public var detail: String?
        /// The body, as text.
        public var body: String

        public var description: String {
            var text = "\(status)"
            if let reason { text += " \(reason)" }
            if let timestamp { text += " (since \(timestamp) ms)" }
            if let requestId { text += " apns-id: \(requestId)" }
            if let detail { text += "\n\(detail)" }
            return text
        }
    }

    /// The endpoint, such as `https://127.0.0.1:2197`.
    public let server: String
    private let http: HTTPClient
    private let timeout: TimeAmount

    /// Creates a client.
    public init(server: String, http: HTTPClient, timeout: TimeAmount = .seconds(30)) {
        self.server = server.hasSuffix("/") ? String(server.dropLast()) : server
        self.http = http
        self.timeout = timeout
    }

    /// `POST /3/device/{token}`.
    ///
    /// - Parameters:
    ///   - token: The activity's push token or the device's push-to-start token.
    ///   - topic: The app's bundle id; `.push-type.liveactivity` is added when missing.
    ///   - payload: The JSON payload.
    ///   - providerToken: The JWT.
    ///   - extraHeaders: More `apns-*` headers (`apns-priority`, `apns-expiration`, `apns-id`, …).
    public func push(
        token: String, topic: String, payload: Data, providerToken: String, extraHeaders: [(String, String)] = []
    ) async throws -> Response {
        let fullTopic = topic.hasSuffix(".push-type.liveactivity") ? topic : topic + ".push-type.liveactivity"
        var headers = [("apns-topic", fullTopic), ("apns-push-type", "liveactivity")]
        headers += extraHeaders
        return try await send(.POST, "/3/device/\(token)", headers: headers, body: payload, providerToken: providerToken)
    }

    /// `POST /4/broadcasts/apps/{bundleId}` with `apns-channel-id`; `apns-expiration: 0` (deliver
    /// now, store nothing) and `apns-priority: 10` unless `extraHeaders` say otherwise.
    public func broadcast(
        bundleId: String, channelId: String, payload: Data, providerToken: String, extraHeaders: [(String, String)] = []
    ) async throws -> Response {
        var headers = [("apns-channel-id", channelId), ("apns-push-type", "liveactivity")]
        for (name, value) in [("apns-expiration", "0"), ("apns-priority", "10")] where !extraHeaders.contains(where: { $0.0 == name }) {
            headers.append((name, value))
        }
        headers += extraHeaders
        return try await send(.POST, "/4/broadcasts/apps/\(bundleId)", headers: headers, body: payload, providerToken: providerToken)
    }

    /// `POST /1/apps/{bundleId}/channels`: creates a channel; its id is in `channelId`.
    public func createChannel(bundleId: String, storagePolicy: Int, providerToken: String) async throws -> Response {
        let body = Data(ChannelConfiguration(messageStoragePolicy: storagePolicy).body.utf8)
        return try await send(.POST, "/1/apps/\(bundleId)/channels", headers: [], body: body, providerToken: providerToken)
    }

    /// Sends any request to the endpoint.
    public func send(
        _ method: HTTPMethod, _ path: String, headers: [(String, String)], body: Data?, providerToken: String?
    ) async throws -> Response {
        var request = HTTPClientRequest(url: server + path)
        request.method = method
        if let providerToken { request.headers.add(name: "authorization", value: "bearer \(providerToken)") }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(data: body)) }
        let response: HTTPClientResponse
        let bytes: ByteBuffer
        do {
            response = try await http.execute(request, timeout: timeout)
            bytes = try await response.body.collect(upTo: 1 << 20)
        } catch {
            throw ClientError.unreachable(server: server, cause: error)
        }
        struct Refusal: Decodable {
            var reason: String?
            var timestamp: Int64?
        }
        let refusal = bytes.readableBytes > 0 ? try? JSONDecoder().decode(Refusal.self, from: Data(buffer: bytes)) : nil
        return Response(
            status: Int(response.status.code),
            requestId: response.headers.first(name: "apns-id") ?? response.headers.first(name: "apns-request-id"),
            channelId: response.headers.first(name: "apns-channel-id"), reason: refusal?.reason, timestamp: refusal?.timestamp,
            detail: response.headers.first(name: "islet-detail"), body: String(buffer: bytes)
        )
    }
}
