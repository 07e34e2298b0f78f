import Foundation
import IsletClient
import IsletCore
import Logging
import NIOHTTP1

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

    private var settings: AppSettings? {
        do {
            let path = "/v1/devices/\(connection.client.escaped(connection.device))/settings"
            return try connection.client.sendBlocking(.GET, path, expect: [String: [AppSettings]].self)["settings"]?.first
        } catch {
            connection.logger.error("Could not read the app's Live Activity settings", metadata: ["error": "\(error)"])
            return nil
        }
    }
}
