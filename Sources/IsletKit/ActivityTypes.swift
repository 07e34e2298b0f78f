import Foundation

/// Where a Live Activity is in its life.
public enum ActivityState: String, Hashable, Sendable, Codable {
    /// Scheduled to start later.
    case pending
    /// Shown and accepting updates.
    case active
    /// Its content is out of date (its stale date passed).
    case stale
    /// Ended: still on the Lock Screen until dismissed, accepting no updates.
    case ended
    /// Gone from the Lock Screen.
    case dismissed
}

/// When an ended Live Activity leaves the Lock Screen.
public struct ActivityUIDismissalPolicy: Hashable, Sendable {
    enum Kind: Hashable, Sendable {
        case `default`, immediate, after(Date)
    }

    let kind: Kind

    /// Stays up to four hours after the end.
    public static let `default` = ActivityUIDismissalPolicy(kind: .default)
    /// Leaves at once.
    public static let immediate = ActivityUIDismissalPolicy(kind: .immediate)
    /// Leaves at `date`, or four hours after the end if that is sooner.
    public static func after(_ date: Date) -> ActivityUIDismissalPolicy { ActivityUIDismissalPolicy(kind: .after(date)) }
}

/// How a Live Activity receives remote updates.
public enum PushType: Hashable, Sendable {
    /// Its own push token, for APNs-format pushes to it.
    case token
    /// A broadcast channel, by its identifier.
    case channel(String)
}

/// Whether a Live Activity stays on the Lock Screen or only briefly in the Dynamic Island.
public enum ActivityStyle: String, Hashable, Sendable {
    case standard, transient
}

/// What an alerting update shows and plays. (ActivityKit takes `LocalizedStringResource`s,
/// which Linux's Foundation does not have; string literals read the same.)
public struct AlertConfiguration: Hashable, Sendable {
    /// A sound to play with an alert.
    public struct AlertSound: Hashable, Sendable {
        let name: String
        /// The system's sound.
        public static let `default` = AlertSound(name: "default")
        /// A sound file of the app's.
        public static func named(_ name: String) -> AlertSound { AlertSound(name: name) }
    }

    public var title: String
    public var body: String
    public var sound: AlertSound

    /// Creates an alert.
    public init(title: String, body: String, sound: AlertSound) {
        self.title = title
        self.body = body
        self.sound = sound
    }
}

/// Why a Live Activity could not be started, as ActivityKit names it.
public enum ActivityAuthorizationError: Error, Hashable, Sendable {
    /// The attributes and content state are larger than 4 KB together.
    case attributesTooLarge
    /// Live Activities are turned off for the app on this device.
    case denied
    /// The device shows as many Live Activities as it may.
    case globalMaximumExceeded
    /// The app has as many Live Activities as it may.
    case targetMaximumExceeded
    case malformedActivityIdentifier
    case missingProcessIdentifier
    case persistenceFailure
    case reconnectNotPermitted
    case unentitled
    case unsupported
    case unsupportedTarget
    case visibility
}
