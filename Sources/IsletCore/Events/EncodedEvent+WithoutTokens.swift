import Foundation

// What a display without a key is shown: everything its screen shows, nothing that lets a
// provider push to it. Push tokens are capabilities (with a provider key, a push to a token
// changes what a phone shows), so they go only to callers with a key.

extension EncodedEvent {
    /// The event with its push tokens left out; `nil` for an event that is only a token
    /// (`pushTokenUpdated`).
    public var withoutTokens: EncodedEvent? {
        switch type {
        case .pushTokenUpdated:
            return nil
        case .started, .settingsChanged:
            guard var event = try? decoded(), case .object(var data) = event.data else { return self }
            guard data["pushToken"] != nil || data["pushToStartToken"] != nil else { return self }
            data["pushToken"] = nil
            data["pushToStartToken"] = nil
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
    /// The activity without its push token.
    public var withoutTokens: Activity {
        var activity = self
        activity.pushToken = nil
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
