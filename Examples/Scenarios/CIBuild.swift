import Foundation
import IsletCore
import IsletKit

/// Reference 002's CI build status, with the steps of the pipeline and an elapsed-time timer.
///
/// The status is a `String` enum so a shell script can write it (`"status": "inProgress"`):
/// `Examples/CI/islet-ci.sh` drives the same type and layout from a real CI job.
public struct IsletCIBuildAttributes: ActivityAttributes {
    public enum Status: String, Codable, Hashable, CaseIterable, Sendable {
        case pending, inProgress, succeeded, failed
    }

    public struct ContentState: Codable, Hashable, Sendable {
        public var status: Status
        /// The step running now, or the last one.
        public var step: String
        /// Steps finished, of `steps`.
        public var done: Double
        public var steps: Double
        /// When the build began running: the timer counts up from it.
        public var startedAt: Date?
        /// Seconds it ran, once finished.
        public var elapsed: Double?
    }

    /// The pipeline, such as `islet · main`.
    public var pipeline: String
    /// The CI's build number or id.
    public var buildId: String
}

/// `islet demo ci`: a build queued, then running its steps, then succeeded (or failed with `--fail`).
public struct CIBuild: Demo {
    public let name = "ci"
    public let summary = "Reference 002's CI build: pending, then in progress step by step with an elapsed timer, then succeeded (or --fail)."
    public let bundleId = "com.example.demo.ci"
    /// Whether the tests fail.
    public var fails = false
    /// The steps and their seconds.
    public var pipeline: [(name: String, seconds: Double)] = [
        ("Checkout", 4), ("Resolve packages", 8), ("Build", 20), ("Test", 18), ("Archive", 6),
    ]

    public init(fails: Bool = false) {
        self.fails = fails
    }

    public var attributesType: String { IsletCIBuildAttributes.attributesTypeName }
    public func layout() throws -> JSONValue { try Self.configuration.document() }

    public func run(in context: DemoContext) async throws {
        let steps = Double(pipeline.count)
        var state = IsletCIBuildAttributes.ContentState(status: .pending, step: "Waiting for a runner", done: 0, steps: steps)
        let activity = try Activity<IsletCIBuildAttributes>.request(
            attributes: IsletCIBuildAttributes(pipeline: "islet · main", buildId: "#\(Int.random(in: 1000...9999))"),
            content: ActivityContent(state: state, staleDate: nil)
        )
        context.note("Build queued: activity \(activity.id).")
        try await activity.endingOnCancel {
            try await context.pause(5)
            state.status = .inProgress
            state.startedAt = Date()
            for (index, step) in pipeline.enumerated() {
                state.step = step.name
                state.done = Double(index)
                try activity.requireShown()
                await activity.update(ActivityContent(state: state, staleDate: nil))
                context.note("\(index + 1)/\(pipeline.count) \(step.name)…")
                if fails, step.name == "Test" {
                    try await context.pause(step.seconds / 2)
                    break
                }
                try await context.pause(step.seconds)
            }
            state.status = fails ? .failed : .succeeded
            if !fails { state.done = steps }
            state.elapsed = (Date().timeIntervalSince(state.startedAt ?? Date()) * context.speed).rounded()
            await activity.end(
                ActivityContent(state: state, staleDate: nil),
                dismissalPolicy: .after(Date().addingTimeInterval(15 * 60))
            )
            context.note(fails ? "Failed at \(state.step): the card says so for 15 minutes." : "Succeeded: the card stays 15 minutes.")
        }
    }

    static let configuration = ActivityConfiguration(for: IsletCIBuildAttributes.self) { context in
        VStack(alignment: .leading, spacing: 8) {
            HStack(spacing: 8) {
                statusIcon(context.state.status).font(.system(size: 22, weight: .semibold))
                VStack(alignment: .leading, spacing: 1) {
                    Text(context.attributes.pipeline).font(.system(size: 15, weight: .semibold)).lineLimit(1)
                    HStack(spacing: 4) {
                        Text(context.attributes.buildId).foregroundStyle(.secondary)
                        Text("·").foregroundStyle(.secondary)
                        statusText(context.state.status)
                    }
                    .font(.system(size: 13, weight: .medium))
                }
                Spacer()
                If(context.state.status == .inProgress) {
                    Text(context.state.startedAt, style: .timer)
                        .font(.system(size: 22, weight: .semibold)).monospacedDigit().foregroundStyle(.blue)
                } else: {
                    If(context.state.status == .pending) {
                        Text("queued").font(.system(size: 15, weight: .medium)).foregroundStyle(.secondary)
                    } else: {
                        Text(context.state.elapsed, format: .duration)
                            .font(.system(size: 22, weight: .semibold)).monospacedDigit().foregroundStyle(.secondary)
                    }
                }
            }
            ProgressView(value: context.state.done, total: context.state.steps).tint(.blue)
            HStack(spacing: 4) {
                Image(systemName: "terminal.fill").foregroundStyle(.secondary)
                Text(context.state.step).lineLimit(1)
                Spacer()
                Text(context.state.done, format: .number(precision: 0))
                Text("of")
                Text(context.state.steps, format: .number(precision: 0))
            }
            .font(.system(size: 13, weight: .medium)).foregroundStyle(.secondary)
        }
        .padding(16)
    } dynamicIsland: { context in
        DynamicIsland {
            DynamicIslandExpandedRegion(.leading) { statusIcon(context.state.status).font(.system(size: 24, weight: .semibold)) }
            DynamicIslandExpandedRegion(.center) {
                VStack(spacing: 1) {
                    Text(context.attributes.pipeline).font(.system(size: 14, weight: .semibold)).lineLimit(1)
                    Text(context.state.step).font(.system(size: 12)).foregroundStyle(.secondary).lineLimit(1)
                }
            }
            DynamicIslandExpandedRegion(.trailing) {
                If(context.state.status == .inProgress) {
                    Text(context.state.startedAt, style: .timer).monospacedDigit().foregroundStyle(.blue)
                } else: {
                    statusText(context.state.status)
                }
            }
            DynamicIslandExpandedRegion(.bottom) { ProgressView(value: context.state.done, total: context.state.steps).tint(.blue) }
        } compactLeading: {
            statusIcon(context.state.status)
        } compactTrailing: {
            If(context.state.status == .inProgress) {
                Text(context.state.startedAt, style: .timer).monospacedDigit().foregroundStyle(.blue)
            } else: {
                statusText(context.state.status)
            }
        } minimal: {
            statusIcon(context.state.status)
        }
        .keylineTint(.blue)
    }
}

private typealias BuildStatus = Bound<IsletCIBuildAttributes.ContentState, IsletCIBuildAttributes.Status>

/// The status's symbol in its color.
private func statusIcon(_ status: BuildStatus) -> LayoutNode {
    If(status == .succeeded) {
        Image(systemName: "checkmark.circle.fill").foregroundStyle(.green)
    } else: {
        If(status == .failed) {
            Image(systemName: "xmark.circle.fill").foregroundStyle(.red)
        } else: {
            If(status == .inProgress) {
                Image(systemName: "hammer.fill").foregroundStyle(.blue)
            } else: {
                Image(systemName: "hourglass").foregroundStyle(.orange)
            }
        }
    }
}

/// The status in words, in its color.
private func statusText(_ status: BuildStatus) -> LayoutNode {
    If(status == .succeeded) {
        Text("Succeeded").foregroundStyle(.green)
    } else: {
        If(status == .failed) {
            Text("Failed").foregroundStyle(.red)
        } else: {
            If(status == .inProgress) { Text("Building").foregroundStyle(.blue) } else: { Text("Pending").foregroundStyle(.orange) }
        }
    }
}
