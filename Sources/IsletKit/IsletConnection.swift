import Foundation
import IsletClient
import IsletCore
import Logging
import Synchronization

/// Which Islet server IsletKit talks to, with which app key, for which device.
///
/// By default it reads `ISLET_URL` (default `http://127.0.0.1:8080`), `ISLET_KEY` (an app's
/// key), `ISLET_DEVICE` (default `default`) and `ISLET_APP` from the environment the first time
/// it is needed; `configure(server:key:device:app:)` sets it in code instead.
///
/// With an app's key, IsletKit is that app. With the admin key (a test harness, `islet demo`),
/// `app` names the app it acts as.
public final class IsletConnection: Sendable {
    /// The server's base URL.
    public let server: String
    /// The app's API key.
    public let key: String?
    /// The device activities start on.
    public let device: String
    /// The app's bundle id when the key is the admin's; `nil` for the key's own app.
    public let app: String?
    let client: IsletClient
    let logger = Logger(label: "IsletKit")
    /// The event stream behind every activity sequence.
    let feed: EventFeed

    init(server: String, key: String?, device: String, app: String?) {
        self.server = server
        self.key = key
        self.device = device
        self.app = app
        client = IsletClient(server: server, key: key)
        feed = EventFeed(client: client, device: device, app: app, logger: logger)
    }

    private static let current = Mutex<IsletConnection?>(nil)

    /// The connection every `Activity` uses.
    public static var shared: IsletConnection {
        current.withLock { current in
            if let current { return current }
            let environment = ProcessInfo.processInfo.environment
            let connection = IsletConnection(
                server: environment["ISLET_URL"] ?? "http://127.0.0.1:8080", key: environment["ISLET_KEY"],
                device: environment["ISLET_DEVICE"] ?? DeviceID.defaultDevice, app: environment["ISLET_APP"]
            )
            current = connection
            return connection
        }
    }

    /// Talks to `server` with `key` from now on, showing activities on `device`; `app` names the
    /// app when `key` is the admin's.
    public static func configure(server: String, key: String?, device: String = "default", app: String? = nil) {
        let replaced = current.withLock { current in
            defer { current = IsletConnection(server: server, key: key, device: device, app: app) }
            return current
        }
        replaced?.feed.stop()
    }
}
