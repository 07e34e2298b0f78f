import Crypto
import Foundation
import IsletCore

/// Standard Webhooks 1.0's signature: HMAC-SHA256, keyed by the secret, over
/// `"{webhook-id}.{webhook-timestamp}.{body}"`, written `v1,<base64>`; several, space-separated,
/// while a secret rotates (the new one first).
public enum WebhookSignature {
    /// The `webhook-signature` header for a message signed by each of `secrets`.
    public static func header(id: String, timestamp: Int64, body: some DataProtocol, secrets: [WebhookSecret]) -> String {
        secrets.map { "v1," + signature(id: id, timestamp: timestamp, body: body, secret: $0) }.joined(separator: " ")
    }

    /// One signature, in base64.
    static func signature(id: String, timestamp: Int64, body: some DataProtocol, secret: WebhookSecret) -> String {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: secret.key))
        hmac.update(data: Array("\(id).\(timestamp).".utf8))
        hmac.update(data: body)
        return Data(hmac.finalize()).base64EncodedString()
    }

    /// Whether `header` holds a `v1` signature of the message by `secret` (constant time per
    /// signature): what a receiver checks, here for `islet webhooks listen` and the tests.
    public static func verify(header: String, id: String, timestamp: Int64, body: some DataProtocol, secret: WebhookSecret) -> Bool {
        let expected = Array(signature(id: id, timestamp: timestamp, body: body, secret: secret).utf8)
        return header.split(separator: " ").contains { item in
            guard item.hasPrefix("v1,") else { return false }
            let given = Array(item.dropFirst(3).utf8)
            return given.count == expected.count && zip(given, expected).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
        }
    }
}
