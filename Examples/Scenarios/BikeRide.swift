import Foundation
import IsletCore
import IsletKit

/// Reference 003's bike computer: the ride's speed as the headline, updated every second.
public struct IsletDemoBikeAttributes: ActivityAttributes {
    public struct ContentState: Codable, Hashable, Sendable {
        /// km/h, now.
        public var speed: Double
        /// km so far.
        public var distance: Double
        /// km/h over the time spent moving.
        public var averageSpeed: Double
        /// km/h, the fastest so far.
        public var maxSpeed: Double
        /// Seconds since the start.
        public var rideTime: Double
        /// The ride is over: the state is its summary.
        public var finished: Bool
    }

    public var name: String
    public var startDate: Date
}

/// `islet demo bike`: a simulated ride, one update a second for its whole length, ending with a
/// summary that stays on the Lock Screen.
public struct BikeRide: Demo {
    public let name = "bike"
    public let summary = "Reference 003's bike computer: a simulated two-minute ride, speed and distance every second, then its summary."
    public let bundleId = "com.example.demo.bike"
    /// The ride's length in seconds: one update each.
    public var length = 120

    public init() {}

    public var attributesType: String { IsletDemoBikeAttributes.attributesTypeName }
    public func layout() throws -> JSONValue { try Self.configuration.document() }

    public func run(in context: DemoContext) async throws {
        var ride = RideSimulation()
        let activity = try Activity<IsletDemoBikeAttributes>.request(
            attributes: IsletDemoBikeAttributes(name: "Morning ride", startDate: Date()),
            content: ActivityContent(state: ride.state, staleDate: nil)
        )
        context.note("Riding: activity \(activity.id), \(length) updates, one a second\(context.speed == 1 ? "" : " (×\(context.speed))").")
        try await activity.endingOnCancel {
            let schedule = context.schedule()
            for second in 1...length {
                try await schedule.wait(until: Double(second))
                try activity.requireShown()
                ride.advance()
                // Stale if the updates stop: a crashed bike computer shows it within seconds.
                await activity.update(ActivityContent(state: ride.state, staleDate: context.date(in: 10)))
                context.progress(
                    "\(clock(ride.state.rideTime)) · \(String(format: "%4.1f", ride.state.speed)) km/h · "
                        + String(format: "%.2f km", ride.state.distance)
                )
            }
            let summary = ride.summary
            await activity.end(ActivityContent(state: summary, staleDate: nil), dismissalPolicy: .after(Date().addingTimeInterval(15 * 60)))
            context.note(
                String(format: "Finished: %.2f km in %@, average %.1f km/h, top %.1f km/h; the summary stays 15 minutes.",
                       summary.distance, clock(summary.rideTime), summary.averageSpeed, summary.maxSpeed)
            )
        }
    }

    /// The layout, as a widget extension's `ActivityConfiguration` would declare it.
    static let configuration = ActivityConfiguration(for: IsletDemoBikeAttributes.self) { context in
        VStack(alignment: .leading, spacing: 6) {
            HStack(spacing: 6) {
                If(context.state.finished.isTrue) {
                    Image(systemName: "flag.checkered").foregroundStyle(.green)
                } else: {
                    If(context.state.speed < 0.5) {
                        Image(systemName: "pause.fill").foregroundStyle(.orange)
                    } else: {
                        Image(systemName: "bicycle").foregroundStyle(.green)
                    }
                }
                Text(context.attributes.name).font(.system(size: 15, weight: .semibold)).lineLimit(1)
                Spacer()
                Image(systemName: "stopwatch").foregroundStyle(.secondary)
                Text(context.state.rideTime, format: .duration)
                    .font(.system(size: 15, weight: .semibold)).monospacedDigit().foregroundStyle(.secondary)
            }
            If(context.state.finished.isTrue) {
                HStack(alignment: .bottom, spacing: 18) {
                    figure(context.state.distance, precision: 2, label: "km")
                    figure(context.state.averageSpeed, precision: 1, label: "km/h average")
                    figure(context.state.maxSpeed, precision: 1, label: "km/h top")
                    Spacer()
                }
            } else: {
                HStack(alignment: .bottom, spacing: 4) {
                    Text(context.state.speed, format: .number(precision: 1))
                        .font(.system(size: 48, weight: .bold)).monospacedDigit().contentTransition(.numericText())
                    Text("km/h").font(.system(size: 15, weight: .semibold)).foregroundStyle(.secondary).padding(.bottom, 9)
                    Spacer()
                    VStack(alignment: .trailing, spacing: 2) {
                        Text(context.state.distance, format: .number(precision: 2, unit: "km"))
                            .font(.system(size: 20, weight: .semibold)).monospacedDigit().contentTransition(.numericText())
                        Text(context.state.averageSpeed, format: .number(precision: 1, unit: "km/h avg"))
                            .font(.system(size: 13, weight: .medium)).monospacedDigit().foregroundStyle(.secondary)
                    }
                    .padding(.bottom, 6)
                }
            }
        }
        .padding(16)
        .activityBackgroundTint(Color(light: .white, dark: Color(hex: "#0F1A14")))
    } dynamicIsland: { context in
        DynamicIsland {
            DynamicIslandExpandedRegion(.leading) {
                HStack(spacing: 6) {
                    Image(systemName: "bicycle").foregroundStyle(.green)
                    Text(context.attributes.name).font(.system(size: 14, weight: .semibold)).lineLimit(1)
                }
            }
            DynamicIslandExpandedRegion(.trailing) {
                Text(context.state.rideTime, format: .duration).font(.system(size: 14, weight: .semibold)).monospacedDigit()
            }
            DynamicIslandExpandedRegion(.bottom) {
                HStack(alignment: .bottom, spacing: 4) {
                    Text(context.state.speed, format: .number(precision: 1))
                        .font(.system(size: 34, weight: .bold)).monospacedDigit().contentTransition(.numericText())
                    Text("km/h").font(.system(size: 13, weight: .semibold)).foregroundStyle(.secondary).padding(.bottom, 6)
                    Spacer()
                    Text(context.state.distance, format: .number(precision: 2, unit: "km"))
                        .font(.system(size: 17, weight: .semibold)).monospacedDigit().padding(.bottom, 4)
                }
            }
        } compactLeading: {
            Image(systemName: "bicycle").foregroundStyle(.green)
        } compactTrailing: {
            Text(context.state.speed, format: .number(precision: 0)).monospacedDigit().contentTransition(.numericText())
        } minimal: {
            Text(context.state.speed, format: .number(precision: 0)).monospacedDigit()
        }
        .keylineTint(.green)
    }
}

/// A number over its label: one figure of the ride's summary.
private func figure(_ value: Bound<IsletDemoBikeAttributes.ContentState, Double>, precision: Int, label: String) -> LayoutNode {
    VStack(alignment: .leading, spacing: 0) {
        Text(value, format: .number(precision: precision)).font(.system(size: 26, weight: .bold)).monospacedDigit()
        Text(label).font(.system(size: 12, weight: .medium)).foregroundStyle(.secondary)
    }
}

/// A ride: rolling hills and a red light after 38 seconds. The same ride
/// every time (no randomness), so a demo's figures can be compared.
struct RideSimulation {
    private(set) var state = IsletDemoBikeAttributes.ContentState(
        speed: 0, distance: 0, averageSpeed: 0, maxSpeed: 0, rideTime: 0, finished: false
    )
    private var movingSeconds = 0.0

    /// One second later.
    mutating func advance() {
        let t = state.rideTime + 1
        var speed = 26 + 6 * sin(t / 23) + 2.5 * sin(t / 5.3) + 1.2 * sin(t * 1.7)
        speed = min(speed, t * 4)  // rolling away from the start
        if (38...46).contains(t) { speed = 0 }  // a red light
        if (47...52).contains(t) { speed = min(speed, (t - 46) * 4.5) }
        speed = max(0, (speed * 10).rounded() / 10)
        state.rideTime = t
        state.speed = speed
        state.distance += speed / 3600
        if speed > 0 { movingSeconds += 1 }
        state.averageSpeed = movingSeconds > 0 ? state.distance / (movingSeconds / 3600) : 0
        state.maxSpeed = max(state.maxSpeed, speed)
    }

    /// The finished ride, standing still.
    var summary: IsletDemoBikeAttributes.ContentState {
        var summary = state
        summary.speed = 0
        summary.finished = true
        return summary
    }
}
