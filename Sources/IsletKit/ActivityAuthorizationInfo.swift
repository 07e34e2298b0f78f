import Foundation
import IsletClient
import IsletCore
import Logging
import Synchronization

/// Whether the app may show Live Activities on the device, as the person set it (the display's
/// settings panel, `islet devices settings`, or `PUT /v1/devices/{id}/settings`).
public final class ActivityAuthorizationInfo: Sendable {
    private let connection: IsletConnection

    /// Reads the settings of the connection's app on its device.
    public init() {
        connection = IsletConnection.shared
    }

    /// Whether Live Activities are on for the app. `false` when the server cannot be asked.
    public var areActivitiesEnabled: Bool { settings?.activitiesEnabled ?? false }

    /// Whether the person allowed the app more frequent updates.
    public var frequentPushesEnabled: Bool { settings?.frequentUpdates ?? false }

    /// Whether Live Activities are on, now and at each change.
    public var activityEnablementUpdates: AsyncStream<Bool> {
        updates { $0.activitiesEnabled }
    }

    /// Whether frequent updates are allowed, now and at each change.
    public var frequentPushEnablementUpdates: AsyncStream<Bool> {
        updates { $0.frequentUpdates }
    }

    private func updates(_ value: @escaping @Sendable (AppSettings) -> Bool) -> AsyncStream<Bool> {
        let device = connection.device
        let now = settings.map(value)
        // A settings change may change the other setting only: yield this one when it changes.
        let last = Mutex(now)
        return .following(connection.feed, first: { now }) { event in
            guard event.type == .settingsChanged, event.deviceId == device, let settings = Wire.payload(AppSettings.self, of: event)
            else { return nil }
            let next = value(settings)
            return last.withLock { last in
                defer { last = next }
                return last == next ? nil : .value(next)
            }
        }
    }

    private var settings: AppSettings? { Self.settings(connection) }

    /// The connection's app's settings on its device, or `nil` (logged) when the server cannot
    /// say.
    static func settings(_ connection: IsletConnection) -> AppSettings? {
        do {
            let settings = try connection.client.settingsBlocking(device: connection.device)
            return connection.app.map { app in settings.first { $0.bundleId == app } } ?? settings.first
        } catch {
            connection.logger.error("Could not read the app's Live Activity settings", metadata: ["error": "\(error)"])
            return nil
        }
    }
}
