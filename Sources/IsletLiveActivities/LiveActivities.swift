#if canImport(ActivityKit)
import ActivityKit
#else
import IsletKit
#endif
import Foundation
import Synchronization

/// An activity's attributes that carry Islet's id: the `islet` member Islet puts into the
/// attributes of every push-to-start, so the app can say which of Islet's activities a new update
/// token belongs to. Add `var islet: String?` to your `ActivityAttributes` and conform.
public protocol IsletIdentifiable {
    /// Islet's id of the activity; `nil` for one the app started without its backend.
    var islet: String? { get }
}

/// Keeps an iOS app's Live Activity tokens fresh at its Islet backend, with nothing secret in the
/// app: a client key (`pk_…`) registers the installation once, and its own credential, kept in
/// the keychain, reports what ActivityKit hands out (docs/installations.md):
///
/// ```swift
/// let activities = LiveActivities.start(server: URL(string: "https://islet.example.com")!, clientKey: "pk_…")
/// activities.track(DeliveryAttributes.self)
/// ```
///
/// For each tracked type it reports the push-to-start token, and for every activity of the type —
/// running at launch, started by the app, or started by a push-to-start — its update token and
/// its `ended` and `dismissed` states. What was reported is kept with the credential, so a
/// relaunch reports only what changed. Each report is tried again, 1 s doubling to 5 min, until
/// Islet takes it, and given up only on a refusal that trying again cannot change.
public final class LiveActivities: Sendable {
    /// The APNs environment the app is built for: `development` from Xcode, `production` from
    /// TestFlight and the App Store (the `aps-environment` entitlement).
    public enum Environment: String, Codable, Sendable {
        case development, production
    }

    private let backend: Backend
    private let tasks = Mutex<[Task<Void, Never>]>([])

    private init(backend: Backend) {
        self.backend = backend
    }

    /// Starts keeping the app's tokens fresh at `server`: registers the installation (once: it is
    /// kept in `store`) with `clientKey`.
    ///
    /// - Parameters:
    ///   - server: The Islet backend's base URL.
    ///   - clientKey: The app's client key (`islet apps client-keys add`): public, safe to ship.
    ///   - bundleId: The app's bundle id; the main bundle's by default.
    ///   - environment: The APNs environment the build is for.
    ///   - store: Where the installation is kept: the keychain on Apple's platforms.
    ///   - log: Where the library says what it did, a line at a time.
    public static func start(
        server: URL, clientKey: String, bundleId: String? = nil, environment: Environment = .production,
        store: (any InstallationStore)? = nil, log: @escaping @Sendable (String) -> Void = { print("IsletLiveActivities: \($0)") }
    ) -> LiveActivities {
        let backend = Backend(
            server: server, clientKey: clientKey, bundleId: bundleId ?? Bundle.main.bundleIdentifier ?? "", environment: environment,
            store: store ?? defaultStore, log: log
        )
        let activities = LiveActivities(backend: backend)
        activities.run { await backend.register() }
        return activities
    }

    /// The keychain on Apple's platforms; elsewhere a file in the user's application support directory.
    private static var defaultStore: any InstallationStore {
        #if canImport(Security)
        KeychainInstallationStore()
        #else
        FileInstallationStore(
            url: FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask)[0].appendingPathComponent("islet-installation.json")
        )
        #endif
    }

    /// Reports the tokens and states of `type`'s activities from now on.
    public func track<Attributes: ActivityAttributes & IsletIdentifiable>(_ type: Attributes.Type) {
        let name = String(describing: Attributes.self)
        let backend = backend
        run {
            if let current = Activity<Attributes>.pushToStartToken {
                await backend.report(.pushToStart(type: name, token: current.hexToken))
            }
            for await token in Activity<Attributes>.pushToStartTokenUpdates {
                await backend.report(.pushToStart(type: name, token: token.hexToken))
            }
        }
        run { [self] in
            // The activities already there (a relaunch), then each new one.
            for activity in Activity<Attributes>.activities { follow(activity) }
            for await activity in Activity<Attributes>.activityUpdates { follow(activity) }
        }
    }

    /// Signs the installation in as the app's user: `signature` is the backend's word for the
    /// id (hex HMAC-SHA256 under the app's user verification secret), which the backend hands the
    /// app when its user signs in. A send to the user then reaches this phone.
    public func signIn(userId: String, signature: String) async {
        await backend.report(.signIn(userId: userId, signature: signature))
    }

    /// Signs the installation out: it is a user of its own again.
    public func signOut() async {
        await backend.report(.signOut)
    }

    /// Stops reporting; what was reported stays reported.
    public func stop() {
        for task in tasks.withLock({ tasks in defer { tasks = [] }; return tasks }) { task.cancel() }
    }

    /// Waits until every report asked for so far has been taken or given up.
    public func settled() async {
        await backend.settled()
    }

    /// Reports one activity's update tokens and its end or dismissal.
    private func follow<Attributes: ActivityAttributes & IsletIdentifiable>(_ activity: Activity<Attributes>) {
        let backend = backend
        guard let islet = activity.attributes.islet else {
            return backend.say("activity \(activity.id) has no Islet id (started without the backend): nothing to report")
        }
        run {
            if let current = activity.pushToken { await backend.report(.update(activity: islet, token: current.hexToken)) }
            for await token in activity.pushTokenUpdates {
                await backend.report(.update(activity: islet, token: token.hexToken))
            }
        }
        run {
            for await state in activity.activityStateUpdates {
                switch state {
                case .ended: await backend.report(.state(activity: islet, "ended"))
                case .dismissed:
                    await backend.report(.state(activity: islet, "dismissed"))
                    return
                default: continue
                }
            }
        }
    }

    private func run(_ work: @escaping @Sendable () async -> Void) {
        let task = Task { await work() }
        tasks.withLock { $0.append(task) }
    }
}

extension Data {
    /// A token as APNs and Islet write it: lowercase hexadecimal.
    var hexToken: String {
        let digits = Array("0123456789abcdef")
        return String(flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0F)]] })
    }
}
