import Crypto
import Foundation
import IsletAPNs
import IsletClient
import IsletCore
import IsletKit

/// A food delivery, as apps show them: its status, the courier, and when it arrives.
public struct IsletDemoDeliveryAttributes: ActivityAttributes {
    public enum Status: String, Codable, Hashable, CaseIterable, Sendable {
        case confirmed, preparing, onTheWay, delivered
    }

    public struct ContentState: Codable, Hashable, Sendable {
        public var status: Status
        public var courier: String
        /// Stops before this one.
        public var stopsAway: Int
        public var eta: Date
    }

    public var restaurant: String
    public var orderNumber: String
}

/// `islet demo delivery`: an activity a provider starts, updates and ends entirely by
/// APNs-format pushes, while the app (IsletKit) only watches, as with ActivityKit's
/// push-to-start: the app gives its push-to-start token to the provider, the provider pushes
/// `start`, the app hands the new activity's push token over, the provider pushes `update`s and
/// `end` to it.
public struct Delivery: Demo {
    public let name = "delivery"
    public let summary = "A delivery driven entirely by APNs-format pushes over HTTP/2: push-to-start, updates with alerts, end."
    public let bundleId = "com.example.demo.delivery"

    public init() {}

    public var attributesType: String { IsletDemoDeliveryAttributes.attributesTypeName }
    public func layout() throws -> JSONValue { try Self.configuration.document() }

    public func run(in context: DemoContext) async throws {
        // The app: its push-to-start token, which it sends to its provider.
        guard let startToken = Activity<IsletDemoDeliveryAttributes>.pushToStartToken else {
            throw DemoError("The server gave no push-to-start token for \(context.bundleId): are Live Activities on for it on this device?")
        }
        // The app watches for the activity a push starts, from before the push.
        let started = Activity<IsletDemoDeliveryAttributes>.activityUpdates

        // The provider: a key of its own, registered with the server as it would be with Apple,
        // for the app the demo plays in (its own, or the app whose key it was given).
        let provider = try await Provider(bundleId: context.bundleId, context: context)
        do {
            try await play(provider: provider, startToken: startToken, started: started, context: context)
        } catch {
            await provider.retire()
            throw error
        }
        await provider.retire()
    }

    /// The provider's side, from the key registered to the activity's end.
    private func play(
        provider: Provider, startToken: Data, started: AsyncStream<IsletKit.Activity<IsletDemoDeliveryAttributes>>, context: DemoContext
    ) async throws {
        context.note("Provider key \(provider.keyId) registered; pushing to https://…/3/device/<push-to-start token>.")

        let total = 60.0
        var state = IsletDemoDeliveryAttributes.ContentState(status: .confirmed, courier: "", stopsAway: 0, eta: context.date(in: total))
        try await provider.push(
            to: Wire.hex(startToken), event: "start", state: state, alert: ("Order confirmed", "Pasta Nostra is on it."),
            extra: [
                "attributes-type": .string(attributesType),
                "attributes": try Wire.json(IsletDemoDeliveryAttributes(restaurant: "Pasta Nostra", orderNumber: "#4711")),
                "input-push-token": 1,
            ]
        )

        // The app sees the activity and sends its push token to the provider.
        guard let activity = await first(of: started, within: 10) else {
            throw DemoError("The push-to-start push was accepted but no activity started within 10 seconds.")
        }
        guard let token = await first(of: activity.pushTokenUpdates, within: 10) else {
            throw DemoError("Activity \(activity.id) started with no push token.")
        }
        context.note("Started by push: activity \(activity.id); the app handed its push token to the provider.")

        try await activity.endingOnCancel {
            let steps: [(at: Double, status: IsletDemoDeliveryAttributes.Status, courier: String, stops: Int, alert: (String, String)?)] = [
                (8, .preparing, "", 0, nil),
                (22, .onTheWay, "Sam", 3, ("Your order is on its way", "Sam picked it up.")),
                (32, .onTheWay, "Sam", 2, nil),
                (42, .onTheWay, "Sam", 1, nil),
                (52, .onTheWay, "Sam", 0, ("Sam is almost there", "You're the next stop.")),
            ]
            let schedule = context.schedule()
            for step in steps {
                try await schedule.wait(until: step.at)
                state.status = step.status
                state.courier = step.courier
                state.stopsAway = step.stops
                // Routine changes at priority 5, which spends no budget; alerts at 10.
                try await provider.push(
                    to: Wire.hex(token), event: "update", state: state, alert: step.alert,
                    priority: step.alert == nil ? 5 : 10
                )
                context.note("update → \(step.status.rawValue)\(step.stops > 0 ? ", \(step.stops) stop\(step.stops == 1 ? "" : "s") away" : "")\(step.alert.map { " (alert: \($0.0))" } ?? "")")
            }
            try await schedule.wait(until: total)
            state.status = .delivered
            state.eta = Date()
            let states = activity.activityStateUpdates  // listening from before the push
            async let ended = first(of: states.filter { $0 == .ended }, within: 10)
            try await provider.push(
                to: Wire.hex(token), event: "end", state: state, alert: nil,
                extra: ["dismissal-date": .number(Date().addingTimeInterval(15 * 60).timeIntervalSince1970.rounded())]
            )
            guard await ended != nil else { throw DemoError("The end push was accepted but the activity did not end.") }
            context.note("end → delivered; the app saw its activity end. The card stays 15 minutes.")
        }
    }

    static let configuration = ActivityConfiguration(for: IsletDemoDeliveryAttributes.self) { context in
        VStack(alignment: .leading, spacing: 10) {
            HStack(spacing: 8) {
                Image(systemName: "takeoutbag.and.cup.and.straw.fill").foregroundStyle(.orange).font(.system(size: 20))
                VStack(alignment: .leading, spacing: 1) {
                    Text(context.attributes.restaurant).font(.system(size: 15, weight: .semibold))
                    headline(context.state).font(.system(size: 13, weight: .medium)).foregroundStyle(.secondary)
                }
                Spacer()
                If(context.state.status == .delivered) {
                    Image(systemName: "checkmark.circle.fill").foregroundStyle(.green).font(.system(size: 24))
                } else: {
                    VStack(alignment: .trailing, spacing: 0) {
                        Text(context.state.eta, style: .time).font(.system(size: 20, weight: .bold)).monospacedDigit()
                        Text("arrival").font(.system(size: 11, weight: .medium)).foregroundStyle(.secondary)
                    }
                }
            }
            HStack(spacing: 14) {
                stage(context.state.status != .confirmed, "fork.knife", "Kitchen")
                stage(context.state.status == .onTheWay || context.state.status == .delivered, "bicycle", "On the way")
                stage(context.state.status == .delivered, "house.fill", "Delivered")
            }
        }
        .padding(16)
    } dynamicIsland: { context in
        DynamicIsland {
            DynamicIslandExpandedRegion(.leading) {
                Image(systemName: "takeoutbag.and.cup.and.straw.fill").foregroundStyle(.orange)
            }
            DynamicIslandExpandedRegion(.center) { headline(context.state).font(.system(size: 14, weight: .semibold)) }
            DynamicIslandExpandedRegion(.trailing) { Text(context.state.eta, style: .time).monospacedDigit() }
            DynamicIslandExpandedRegion(.bottom) {
                HStack(spacing: 10) {
                    stage(context.state.status != .confirmed, "fork.knife", "Kitchen")
                    stage(context.state.status == .onTheWay || context.state.status == .delivered, "bicycle", "On the way")
                    stage(context.state.status == .delivered, "house.fill", "Delivered")
                }
            }
        } compactLeading: {
            Image(systemName: "takeoutbag.and.cup.and.straw.fill").foregroundStyle(.orange)
        } compactTrailing: {
            If(context.state.status == .delivered) {
                Image(systemName: "checkmark").foregroundStyle(.green)
            } else: {
                Text(context.state.eta, style: .timer).monospacedDigit().foregroundStyle(.orange)
            }
        } minimal: {
            Image(systemName: "takeoutbag.and.cup.and.straw.fill").foregroundStyle(.orange)
        }
        .keylineTint(.orange)
    }
}

private typealias DeliveryState = Bound<IsletDemoDeliveryAttributes.ContentState, IsletDemoDeliveryAttributes.ContentState>

/// What is happening, in words.
private func headline(_ state: DeliveryState) -> LayoutNode {
    If(state.status == .confirmed) { Text("Order confirmed") } else: {
        If(state.status == .preparing) { Text("Being prepared") } else: {
            If(state.status == .delivered) { Text("Delivered. Enjoy!") } else: {
                If(state.stopsAway > 0) {
                    HStack(spacing: 4) {
                        Text(state.courier)
                        Text("is")
                        Text(state.stopsAway, format: .number(precision: 0))
                        If(state.stopsAway == 1) { Text("stop away") } else: { Text("stops away") }
                    }
                } else: {
                    HStack(spacing: 4) {
                        Text(state.courier)
                        Text("is almost there")
                    }
                }
            }
        }
    }
}

/// One stage of the order: its symbol and name, lit once reached.
private func stage(_ reached: IsletKit.LayoutCondition, _ symbol: String, _ name: String) -> LayoutNode {
    If(reached) {
        HStack(spacing: 4) {
            Image(systemName: symbol)
            Text(name)
        }
        .foregroundStyle(.orange)
    } else: {
        HStack(spacing: 4) {
            Image(systemName: symbol)
            Text(name)
        }
        .foregroundStyle(.secondary).opacity(0.6)
    }
}

/// The delivery company's server: its signing key and its pushes.
private struct Provider: Sendable {
    let bundleId: String
    let keyId: String
    let signer: ReusedProviderToken
    let client: IsletClient
    let apns: APNsClient

    /// Makes a P-256 key, as Apple's developer site would, and registers its public half.
    init(bundleId: String, context: DemoContext) async throws {
        let key = P256.Signing.PrivateKey()
        self.bundleId = bundleId
        keyId = "DEMO" + String(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(6))
        signer = ReusedProviderToken(try await ProviderTokenSigner(p8: key.pemRepresentation, keyId: keyId, teamId: "ISLETDEMO1"))
        client = context.client
        apns = context.apns
        _ = try await client.addProviderKey(bundleId: bundleId, keyId: keyId, teamId: "ISLETDEMO1", publicKey: key.publicKey.pemRepresentation)
    }

    /// Removes the key: a finished demo leaves nothing behind.
    func retire() async {
        // In a task of its own: a demo stopped by Ctrl-C (a cancelled task) still removes it.
        await Task.detached { [self] in try? await client.deleteProviderKey(bundleId: bundleId, keyId: keyId) }.value
    }

    /// Pushes a Live Activity payload; throws on any refusal, with Apple's reason.
    func push(
        to token: String, event: String, state: IsletDemoDeliveryAttributes.ContentState, alert: (String, String)?,
        priority: Int = 10, extra: [String: JSONValue] = [:]
    ) async throws {
        var aps: [String: JSONValue] = [
            "event": .string(event), "timestamp": .number(Date().timeIntervalSince1970),
            // As iOS decodes it: default JSONEncoder, dates in seconds since 2001.
            "content-state": try Wire.json(state),
        ]
        if let (title, body) = alert { aps["alert"] = ["title": .string(title), "body": .string(body)] }
        aps.merge(extra) { _, new in new }
        let payload = try JSONEncoder().encode(JSONValue.object(["aps": .object(aps)]))
        let response = try await apns.push(
            token: token, topic: bundleId, payload: payload, providerToken: try await signer.token(),
            extraHeaders: [("apns-priority", "\(priority)")]
        )
        guard response.status == 200 else { throw DemoError("The \(event) push was refused: \(response)") }
    }
}
