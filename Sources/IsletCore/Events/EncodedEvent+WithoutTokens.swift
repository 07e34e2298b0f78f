import Foundation

// What a display without a key is shown: everything its screen shows, nothing that lets a
// provider push to it. Push tokens and broadcast channel ids are capabilities (with a provider
// key, a push to a token or a channel changes what a phone shows), so they go only to callers
// with a key. An activity on a channel is shown to them without a `pushType`.

extension EncodedEvent {
    /// The event with its push tokens and channel id left out; `nil` for an event that is only
    /// a token (`pushTokenUpdated`) or about requests to tokens (`delivery`).
    public var withoutTokens: EncodedEvent? {
        switch type {
        case .pushTokenUpdated, .delivery:
            return nil
        case .started, .settingsChanged:
            guard var event = try? decoded(), case .object(var data) = event.data else { return self }
            let channel = data["pushType"]?["channel"]
            guard data["pushToken"] != nil || data["pushToStartToken"] != nil || channel != nil else { return self }
            data["pushToken"] = nil
            data["pushToStartToken"] = nil
            if channel != nil { data["pushType"] = nil }
            event.data = .object(data)
            return EncodedEvent(
                id: event.id, type: event.type, time: event.time, bundleId: event.bundleId, deviceId: event.deviceId,
                activityId: event.activityId, dataJSON: (try? WireFormat.string(event.data)) ?? "{}"
            )
        default:
            return self
        }
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
    /// The settings without the push-to-start token.
    public var withoutTokens: AppSettings {
        var settings = self
        settings.pushToStartToken = nil
        return settings
    }
}
