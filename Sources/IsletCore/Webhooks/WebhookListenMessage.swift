import Foundation

/// A message on an `islet webhooks listen` session's WebSocket (docs/webhooks.md, "Listening
/// from a laptop"), one JSON text frame each:
///
/// - the server's first, `ready`: the session's endpoint, its secret included;
/// - the server's `request`: a webhook as it would go over HTTP — its `id` (`webhook-id`), its
///   headers (`webhook-timestamp`, `webhook-signature`, `content-type`) and its body;
/// - the listener's `response` to a request (same `id`): the status its forward target
///   answered and the answer's first bytes, or the `error` that kept it from answering.
public struct WebhookListenMessage: Codable, Hashable, Sendable {
    public enum Kind: String, Codable, Sendable {
        case ready, request, response
    }

    public var type: Kind
    public var id: String?
    public var webhook: WebhookEndpointView?
    public var headers: [String: String]?
    public var body: String?
    public var status: Int?
    public var error: String?

    public init(
        type: Kind, id: String? = nil, webhook: WebhookEndpointView? = nil, headers: [String: String]? = nil, body: String? = nil,
        status: Int? = nil, error: String? = nil
    ) {
        self.type = type
        self.id = id
        self.webhook = webhook
        self.headers = headers
        self.body = body
        self.status = status
        self.error = error
    }
}
