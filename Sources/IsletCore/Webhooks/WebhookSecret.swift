import Foundation

/// A webhook endpoint's signing secret as Standard Webhooks 1.0 writes it: `whsec_` and the key
/// in base64. Its `description` never shows the key: a secret printed by mistake (a log line, an
/// error, a trace) says only that it is one.
public struct WebhookSecret: Sendable, Hashable, CustomStringConvertible {
    public static let prefix = "whsec_"
    /// The key's bytes: 24 when Islet makes it; 16 to 64 accepted from a backup or an import.
    static let generatedBytes = 24
    static let acceptedBytes = 16...64

    /// The key, as HMAC-SHA256 takes it.
    public let key: [UInt8]

    /// A new random secret, from the system's cryptographic generator (`getrandom` on Linux).
    public static func generate() -> WebhookSecret {
        var generator = SystemRandomNumberGenerator()
        return WebhookSecret(key: (0..<generatedBytes).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    private init(key: [UInt8]) {
        self.key = key
    }

    /// Reads `whsec_<base64>`; `nil` for anything else, or a key shorter than 16 bytes or longer
    /// than 64.
    public init?(_ text: String) {
        guard text.hasPrefix(Self.prefix), let key = Data(base64Encoded: String(text.dropFirst(Self.prefix.count))),
              Self.acceptedBytes.contains(key.count)
        else { return nil }
        self.key = Array(key)
    }

    /// `whsec_<base64>`: shown once, when the endpoint is made or its secret rotated, and stored.
    public var text: String { Self.prefix + Data(key).base64EncodedString() }

    public var description: String { "whsec_(hidden)" }
}
