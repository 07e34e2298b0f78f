import IsletKit   // was: import ActivityKit

/// Your app's own attributes, as on iOS.
struct BikeAttributes: ActivityAttributes {
    struct ContentState: Codable, Hashable {
        var speed: Double
        var distance: Double
    }

    var name: String
}

let activity = try Activity<BikeAttributes>.request(
    attributes: BikeAttributes(name: "Morning ride"),
    content: ActivityContent(state: .init(speed: 0, distance: 0), staleDate: nil)
)
await activity.update(ActivityContent(state: .init(speed: 27.4, distance: 1.2), staleDate: nil))
for await state in activity.activityStateUpdates { print(state) }
