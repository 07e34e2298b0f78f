import Foundation

// The REST API's answers that are not one of the model's types, once: the server encodes them
// and the client decodes them.

/// `POST /v1/apps`: the app, and its API key — the only time the key is shown.
public struct CreatedApp: Codable, Hashable, Sendable {
    /// The app.
    public var app: App
    /// Its API key.
    public var apiKey: String

    public init(app: App, apiKey: String) {
        self.app = app
        self.apiKey = apiKey
    }
}

/// `POST /v1/devices/{id}/key`: a device's new display key — the only time it is shown.
public struct IssuedDeviceKey: Codable, Hashable, Sendable {
    /// The device.
    public var deviceId: DeviceID
    /// The key.
    public var key: String

    public init(deviceId: DeviceID, key: String) {
        self.deviceId = deviceId
        self.key = key
    }
}

/// Every error: `{"error": {"reason", "message"}}`.
public struct ErrorBody: Codable, Hashable, Sendable {
    /// The error.
    public struct Detail: Codable, Hashable, Sendable {
        /// A stable name a program can switch on.
        public var reason: ErrorReason
        /// What happened, for a person.
        public var message: String
    }

    /// The error.
    public var error: Detail

    public init(_ error: IsletError) {
        self.error = Detail(reason: error.reason, message: error.message)
    }

    /// The error as a value.
    public var isletError: IsletError { IsletError(error.reason, error.message) }
}

/// A listing: `{"<name>": [items]}`, such as `{"activities": […]}`, with `"next": "<cursor>"`
/// beside the items while more pages remain.
public struct Listing<Item: Codable & Sendable>: Codable, Sendable {
    /// The items, in the order the server gives them.
    public var items: [Item]
    /// The member's name.
    public var name: String
    /// The cursor of the next page, or `nil` on the last.
    public var next: String?

    public init(_ name: String, _ items: [Item], next: String? = nil) {
        self.name = name
        self.items = items
        self.next = next
    }

    /// A page as a listing named `name`.
    public init(_ name: String, _ page: Page<Item>) {
        self.init(name, page.items, next: page.next)
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
        static var next: Key { Key(stringValue: "next") }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        let names = container.allKeys.filter { $0.stringValue != Key.next.stringValue }
        guard let key = names.first, names.count == 1 else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: [], debugDescription: "A listing is an object with one list, and \"next\" while more pages remain.")
            )
        }
        name = key.stringValue
        items = try container.decode([Item].self, forKey: key)
        next = try container.decodeIfPresent(String.self, forKey: .next)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(items, forKey: Key(stringValue: name))
        try container.encodeIfPresent(next, forKey: .next)
    }
}

/// `GET /v1/whoami`: whom the request's key speaks for — or, without a key, whether the request
/// has the keyless display's and console's rights (a loopback server, a page of its own origin,
/// no proxy in between) and why not. `islet status` prints it.
public struct KeyIdentity: Codable, Hashable, Sendable {
    /// Whose key it is.
    public enum Kind: String, Codable, Hashable, Sendable {
        case admin, app, device, none
        /// A client key (`pk_…`) and an installation's credential (docs/installations.md).
        case client, installation
    }

    public var kind: Kind
    /// The app, for an app's key.
    public var bundleId: BundleID?
    /// The device, for a device's key.
    public var deviceId: DeviceID?
    /// Without a key: whether the request may act as the display and the console.
    public var keyless: Bool?
    /// Without a key, when it may not: why.
    public var message: String?

    public init(kind: Kind, bundleId: BundleID? = nil, deviceId: DeviceID? = nil, keyless: Bool? = nil, message: String? = nil) {
        self.kind = kind
        self.bundleId = bundleId
        self.deviceId = deviceId
        self.keyless = keyless
        self.message = message
    }
}
