import Foundation

/// One of an app's users: the app's own id for a person, the phones that are theirs and the
/// tags they carry (docs/audiences.md, "People and their phones").
public struct AppUser: Codable, Hashable, Sendable {
    public var bundleId: BundleID
    /// The app's id for the person.
    public var externalId: String
    /// Their phones, as Islet knows them; in the order given, each once.
    public var devices: [DeviceID]
    /// The app's names and values.
    public var tags: [String: String]
    public var createdAt: Date
    public var updatedAt: Date

    public init(bundleId: BundleID, externalId: String, devices: [DeviceID], tags: [String: String], createdAt: Date, updatedAt: Date) {
        self.bundleId = bundleId
        self.externalId = externalId
        self.devices = devices
        self.tags = tags
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    // MARK: Limits, checked where a user enters

    /// The longest `externalId`, in bytes.
    public static let maximumExternalId = 128
    /// The most phones a user has.
    public static let maximumDevices = 32
    /// The most tags a user carries.
    public static let maximumTags = 64
    /// The longest tag name and value, in bytes.
    public static let maximumTagName = 64
    public static let maximumTagValue = 256

    /// Checks an `externalId`: 1 to 128 bytes, no control characters (it is a path segment).
    public static func checkExternalId(_ id: String) throws {
        guard !id.isEmpty, id.utf8.count <= maximumExternalId, !hasControl(id) else {
            throw IsletError(.invalidRequest, "A user's id is 1 to \(maximumExternalId) bytes without control characters; got \(id.utf8.count) bytes.")
        }
    }

    /// Checks tags: at most 64, names 1 to 64 bytes without a colon (a query says `name:value`),
    /// values up to 256, no control characters.
    public static func checkTags(_ tags: [String: String], field: String = "tags") throws {
        guard tags.count <= maximumTags else {
            throw IsletError(.invalidRequest, "\(field): at most \(maximumTags) tags; got \(tags.count).")
        }
        for (name, value) in tags.sorted(by: { $0.key < $1.key }) {
            guard !name.isEmpty, name.utf8.count <= maximumTagName, !hasControl(name), !name.contains(":") else {
                throw IsletError(
                    .invalidRequest, "\(field): a tag's name is 1 to \(maximumTagName) bytes without control characters or colons; \"\(name.prefix(80))\" is not."
                )
            }
            guard value.utf8.count <= maximumTagValue, !hasControl(value) else {
                throw IsletError(.invalidRequest, "\(field).\(name): a tag's value is up to \(maximumTagValue) bytes without control characters.")
            }
        }
    }

    private static func hasControl(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }
}

/// `PUT /v1/apps/{bundleId}/users/{externalId}`: the user's phones and tags, whole.
public struct PutAppUserBody: Codable, Hashable, Sendable {
    public var devices: [DeviceID]?
    public var tags: [String: String]?

    public init(devices: [DeviceID]? = nil, tags: [String: String]? = nil) {
        self.devices = devices
        self.tags = tags
    }

    /// The phones, each once in the order given, and the tags, checked.
    public func checked() throws -> (devices: [DeviceID], tags: [String: String]) {
        var seen = Set<DeviceID>()
        let devices = (devices ?? []).filter { seen.insert($0).inserted }
        guard devices.count <= AppUser.maximumDevices else {
            throw IsletError(.invalidRequest, "devices: at most \(AppUser.maximumDevices) phones a user; got \(devices.count).")
        }
        let tags = tags ?? [:]
        try AppUser.checkTags(tags)
        return (devices, tags)
    }
}
