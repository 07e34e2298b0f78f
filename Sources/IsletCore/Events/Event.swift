import Foundation

/// One recorded change, with its place in the server's event sequence.
///
/// The `Codable` form is what streams and history send: `{"id", "type", "time", "bundleId",
/// "device", "activityId", "data"}`.
public struct Event: Codable, Hashable, Sendable {
    /// The event's position in the sequence; later events have larger ids.
    public var id: EventID
    /// The kind of change.
    public var type: EventType
    /// When the change was recorded.
    public var time: Date
    /// The app it concerns.
    public var bundleId: BundleID
    /// The device it concerns.
    public var deviceId: DeviceID
    /// The activity it concerns; `nil` for device-level events such as `settingsChanged`.
    public var activityId: ActivityID?
    /// What happened, shaped by `type`.
    public var data: JSONValue

    enum CodingKeys: String, CodingKey {
        case id, type, time, bundleId, deviceId = "device", activityId, data
    }

    /// Creates an event.
    public init(
        id: EventID, type: EventType, time: Date, bundleId: BundleID, deviceId: DeviceID, activityId: ActivityID?,
        data: JSONValue
    ) {
        self.id = id
        self.type = type
        self.time = time
        self.bundleId = bundleId
        self.deviceId = deviceId
        self.activityId = activityId
        self.data = data
    }
}

/// An event as stored and streamed: its routing fields and its wire JSON, encoded once and
/// shared by every subscriber.
public struct EncodedEvent: Hashable, Sendable {
    /// The event's position in the sequence.
    public let id: EventID
    /// The kind of change.
    public let type: EventType
    /// The app it concerns.
    public let bundleId: BundleID
    /// The device it concerns.
    public let deviceId: DeviceID
    /// The activity it concerns, if any.
    public let activityId: ActivityID?
    /// The whole event as JSON, in `Event`'s wire form.
    public let json: String

    /// Builds the wire form of an event from its fields and its `data` JSON text.
    public init(
        id: EventID, type: EventType, time: Date, bundleId: BundleID, deviceId: DeviceID, activityId: ActivityID?,
        dataJSON: String
    ) {
        self.id = id
        self.type = type
        self.bundleId = bundleId
        self.deviceId = deviceId
        self.activityId = activityId
        var json = "{\"id\":\(id),\"type\":\"\(type.rawValue)\",\"time\":\(time.timeIntervalSince1970)"
        json += ",\"bundleId\":\(Self.quoted(bundleId)),\"device\":\(Self.quoted(deviceId))"
        if let activityId {
            json += ",\"activityId\":\(Self.quoted(activityId))"
        }
        json += ",\"data\":\(dataJSON)}"
        self.json = json
    }

    /// Decodes the wire form back into an `Event`: read by `JSONSyntax` and `JSONReadable`,
    /// as `WireFormat.decoder()` reads it (which still reads what those refuse, such as a
    /// state nested deeper than `JSONSyntax.maxDepth`).
    public func decoded() throws -> Event {
        let bytes = Array(json.utf8)
        if let parsed = try? JSONSyntax.parse(bytes), let event = try? Event(json: parsed) { return event }
        return try WireFormat.decoder().decode(Event.self, from: Data(bytes))
    }

    private static func quoted(_ string: String) -> String {
        (try? WireFormat.string(string)) ?? "\"\""
    }
}
