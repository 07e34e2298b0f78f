import Foundation
import IsletClient
import IsletCore
import Logging
import Synchronization

/// Which Islet server IsletKit talks to, with which app key, for which device.
///
/// By default it reads `ISLET_URL` (default `http://127.0.0.1:8080`), `ISLET_KEY` (an app's
/// key) and `ISLET_DEVICE` (default `default`) from the environment the first time it is
/// needed; `configure(server:key:device:)` sets it in code instead.
public final class IsletConnection: Sendable {
    /// The server's base URL.
    public let server: String
    /// The app's API key.
    public let key: String?
    /// The device activities start on.
    public let device: String
    let client: IsletClient
    let logger = Logger(label: "IsletKit")
    /// The event stream behind every activity sequence.
    let feed: EventFeed

    init(server: String, key: String?, device: String) {
        self.server = server
        self.key = key
        self.device = device
        client = IsletClient(server: server, key: key)
        feed = EventFeed(client: client, device: device, logger: logger)
    }

    private static let current = Mutex<IsletConnection?>(nil)

    /// The connection every `Activity` uses.
    public static var shared: IsletConnection {
        current.withLock { current in
            if let current { return current }
            let environment = ProcessInfo.processInfo.environment
            let connection = IsletConnection(
                server: environment["ISLET_URL"] ?? "http://127.0.0.1:8080", key: environment["ISLET_KEY"],
                device: environment["ISLET_DEVICE"] ?? DeviceID.defaultDevice
            )
            current = connection
            return connection
        }
    }

    /// Talks to `server` with `key` from now on, showing activities on `device`.
    public static func configure(server: String, key: String?, device: String = "default") {
        let replaced = current.withLock { current in
            defer { current = IsletConnection(server: server, key: key, device: device) }
            return current
        }
        replaced?.feed.stop()
    }
}
