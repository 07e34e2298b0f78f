import Foundation
import IsletCore
import IsletKit

/// Reference 004's "time to drink" countdown (the Scripting app's `MyLiveActivity`), in Swift,
/// under a name of the demo's own.
public struct IsletDemoWaterAttributes: ActivityAttributes {
    public struct ContentState: Codable, Hashable, Sendable {
        /// Minutes left until the next drink: the article's whole state.
        public var mins: Int
        /// The countdown's bounds, so the display ticks between the minutely updates.
        public var startDate: Date
        public var endDate: Date
    }
}

/// `islet demo water`: five minutes, one update a minute, ended with immediate dismissal, as the
/// article's script does.
public struct WaterCountdown: Demo {
    public let name = "water"
    public let summary = "Reference 004's water countdown: five minutes, one update a minute, ended with immediate dismissal."
    public let bundleId = "com.example.demo.water"
    public var minutes = 5

    public init() {}

    public var attributesType: String { IsletDemoWaterAttributes.attributesTypeName }
    public func layout() throws -> JSONValue { try Self.configuration.document() }

    public func run(in context: DemoContext) async throws {
        let start = Date()
        let end = context.date(in: Double(minutes) * 60)
        func state(_ mins: Int) -> IsletDemoWaterAttributes.ContentState {
            IsletDemoWaterAttributes.ContentState(mins: mins, startDate: start, endDate: end)
        }
        let activity = try Activity<IsletDemoWaterAttributes>.request(
            attributes: IsletDemoWaterAttributes(), content: ActivityContent(state: state(minutes), staleDate: nil)
        )
        context.note("Counting down \(minutes) minutes: activity \(activity.id).")
        try await activity.endingOnCancel {
            let schedule = context.schedule()
            for minute in 1...minutes {
                for second in stride(from: 1, through: 60, by: 1) {
                    try await schedule.wait(until: Double((minute - 1) * 60 + second))
                    try activity.requireShown()
                    context.progress("\(minutes - minute) min \(60 - second) s left")
                }
                let left = minutes - minute
                if left > 0 {
                    await activity.update(ActivityContent(state: state(left), staleDate: nil))
                    context.note("\(left) minute\(left == 1 ? "" : "s") left.")
                }
            }
            await activity.end(ActivityContent(state: state(0), staleDate: nil), dismissalPolicy: .immediate)
            context.note("Time to drink water: ended and dismissed at once.")
        }
    }

    static let configuration = ActivityConfiguration(for: IsletDemoWaterAttributes.self) { context in
        VStack(alignment: .leading, spacing: 8) {
            HStack(spacing: 8) {
                Image(systemName: "drop.fill").foregroundStyle(.cyan).font(.system(size: 22, weight: .semibold))
                If(context.state.mins > 0) {
                    HStack(spacing: 4) {
                        Text(context.state.mins, format: .number(precision: 0)).contentTransition(.numericText(countsDown: true))
                        Text("minutes left until the next drink")
                    }
                } else: {
                    Text("Time to drink water!")
                }
                Spacer()
            }
            .font(.system(size: 16, weight: .semibold))
            HStack(spacing: 8) {
                ProgressView(timerInterval: context.state.startDate, context.state.endDate, countsDown: true).tint(.cyan)
                Text(timerInterval: context.state.startDate, context.state.endDate)
                    .font(.system(size: 15, weight: .semibold)).monospacedDigit().foregroundStyle(.cyan)
                    .frame(width: 56)
            }
        }
        .padding(16)
    } dynamicIsland: { context in
        DynamicIsland {
            DynamicIslandExpandedRegion(.leading) { Image(systemName: "drop.fill").foregroundStyle(.cyan) }
            DynamicIslandExpandedRegion(.trailing) {
                Text(timerInterval: context.state.startDate, context.state.endDate).monospacedDigit().foregroundStyle(.cyan)
            }
            DynamicIslandExpandedRegion(.bottom) {
                HStack(spacing: 4) {
                    Text(context.state.mins, format: .number(precision: 0))
                    Text("minutes left until the next drink")
                }
            }
        } compactLeading: {
            Image(systemName: "drop.fill").foregroundStyle(.cyan)
        } compactTrailing: {
            HStack(spacing: 0) {
                Text(context.state.mins, format: .number(precision: 0))
                Text("m")
            }
        } minimal: {
            Image(systemName: "drop.fill").foregroundStyle(.cyan)
        }
        .keylineTint(.cyan)
    }
}
