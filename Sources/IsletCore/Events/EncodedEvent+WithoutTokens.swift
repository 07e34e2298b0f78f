import Foundation

// What a display without a key is shown: everything its screen shows, nothing that lets a
// provider push to it. Phones' tokens of every kind (`PhoneToken.fields`) and broadcast channel ids are capabilities (with a provider
// key, a push to a token or a channel changes what a phone shows), so they go only to callers
// with a key. An activity on a channel is shown to them without a `pushType`.

extension EncodedEvent {
    /// The event with its push tokens and channel id left out; `nil` for an event that is only
    /// a token (`pushTokenUpdated`). A delivery's target and note keep 8 characters of a token
    /// or a channel id (`String.withoutTokens`), enough to tell two phones apart and not to push
    /// to either.
    public var withoutTokens: EncodedEvent? {
        switch type {
        case .pushTokenUpdated:
            return nil
        case .delivery:
            guard let event = try? decoded(), case .object(var data) = event.data else { return self }
            for field in ["target", "note"] {
                if let text = data[field]?.stringValue { data[field] = .string(text.withoutTokens) }
            }
            return Self.encoded(event, data: data)
        case .started, .settingsChanged:
            guard let event = try? decoded(), case .object(var data) = event.data else { return self }
            let channel = data["pushType"]?["channel"]
            guard PhoneToken.fields.contains(where: { data[$0] != nil }) || channel != nil else { return self }
            for field in PhoneToken.fields { data[field] = nil }
            if channel != nil { data["pushType"] = nil }
            return Self.encoded(event, data: data)
        default:
            return self
        }
    }

    /// The event with other data.
    private static func encoded(_ event: Event, data: [String: JSONValue]) -> EncodedEvent {
        EncodedEvent(
            id: event.id, type: event.type, time: event.time, bundleId: event.bundleId, deviceId: event.deviceId,
            activityId: event.activityId, dataJSON: (try? WireFormat.string(JSONValue.object(data))) ?? "{}"
        )
    }
}

extension Activity {
    /// The activity without its push token or channel id.
    public var withoutTokens: Activity {
        var activity = self
        activity.pushToken = nil
        if case .channel = pushType { activity.pushType = nil }
        return activity
    }
}

extension AppSettings {
    /// The settings without the phone's tokens: its push-to-start token, its FCM registration
    /// token or its Firebase installation ID.
    public var withoutTokens: AppSettings {
        var settings = self
        settings.pushToStartToken = nil
        settings.fcmToken = nil
        settings.fcmInstallationId = nil
        return settings
    }
}

extension DeliveryReport {
    /// The report with the tokens and channel ids in its target and note cut to their first 8
    /// characters (`String.withoutTokens`).
    public var withoutTokens: DeliveryReport {
        var report = self
        report.target = target?.withoutTokens
        report.note = note?.withoutTokens
        return report
    }
}
