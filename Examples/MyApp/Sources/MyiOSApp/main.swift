#if canImport(ActivityKit)
import ActivityKit
#else
import IsletKit   // on Linux, IsletKit plays ActivityKit
#endif
import Foundation
import IsletLiveActivities

/// Your app's attributes, with the id Islet puts into a push-to-start's (README, "Driving real
/// iPhones").
struct DeliveryAttributes: ActivityAttributes, IsletIdentifiable {
    struct ContentState: Codable, Hashable {
        var status: String
    }

    var orderNumber: String
    var islet: String?
}

// At launch: the client key is public; the installation's credential is kept in the keychain.
let activities = LiveActivities.start(server: URL(string: "https://islet.example.com")!, clientKey: "pk_…")
activities.track(DeliveryAttributes.self)
