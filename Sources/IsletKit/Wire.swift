import Foundation
import IsletClient
import IsletCore

/// IsletKit's values to and from Islet's wire format. Attributes and content states go through
/// a default `JSONEncoder` and `JSONDecoder`, as on iOS: a `Date` is seconds since 2001.
enum Wire {
    static func json(_ value: some Encodable) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(value))
    }

    static func decode<Value: Decodable>(_ type: Value.Type, from json: JSONValue) throws -> Value {
        try JSONDecoder().decode(Value.self, from: JSONEncoder().encode(json))
    }

    /// An event's `data` as the payload its type carries.
    static func payload<Payload: Decodable>(_ type: Payload.Type, of event: Event) -> Payload? {
        try? WireFormat.decoder().decode(Payload.self, from: WireFormat.encoder().encode(event.data))
    }

    /// Typed content from the server's.
    static func content<State: Decodable>(_ content: IsletCore.ActivityContent, as type: State.Type) throws -> ActivityContent<State> {
        ActivityContent(state: try decode(State.self, from: content.state), staleDate: content.staleDate, relevanceScore: content.relevanceScore)
    }

    static func content<State>(_ content: ActivityContent<State>) throws -> IsletCore.ActivityContent {
        IsletCore.ActivityContent(state: try json(content.state), staleDate: content.staleDate, relevanceScore: content.relevanceScore)
    }

    static func snapshot<Attributes: ActivityAttributes>(
        of activity: IsletCore.Activity, as type: Attributes.Type
    ) throws -> Activity<Attributes>.Snapshot {
        Activity<Attributes>.Snapshot(
            state: ActivityState(rawValue: activity.state.rawValue) ?? .active,
            content: try content(activity.content, as: Attributes.ContentState.self),
            pushToken: activity.pushToken.flatMap(hexData)
        )
    }

    static func pushType(_ type: PushType) -> IsletCore.PushType {
        switch type {
        case .token: .token
        case .channel(let id): .channel(id)
        }
    }

    static func dismissalPolicy(_ policy: ActivityUIDismissalPolicy) -> IsletCore.DismissalPolicy {
        switch policy.kind {
        case .default: .default
        case .immediate: .immediate
        case .after(let date): .after(date)
        }
    }

    static func alert(_ alert: AlertConfiguration) -> IsletCore.Alert {
        IsletCore.Alert(title: alert.title, body: alert.body, sound: alert.sound.name)
    }

    /// ActivityKit's error for a refusal the rules made, or `nil` for any other failure.
    static func authorizationError(_ error: ClientError) -> ActivityAuthorizationError? {
        guard case .refused(_, let refusal) = error else { return nil }
        switch refusal.reason {
        case .attributesTooLarge: return .attributesTooLarge
        case .denied: return .denied
        case .targetMaximumExceeded: return .targetMaximumExceeded
        case .globalMaximumExceeded: return .globalMaximumExceeded
        default: return nil
        }
    }

    static func hexData(_ hex: String) -> Data? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(hex.count / 2)
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) ?? hex.endIndex
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return Data(bytes)
    }
}
