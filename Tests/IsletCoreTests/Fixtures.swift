import Foundation
import IsletCore

/// A fixed clock origin: tests move time by adding seconds to it, never by sleeping.
let t0 = Date(timeIntervalSince1970: 1_700_000_000)
let hour: TimeInterval = 3600

func at(_ seconds: TimeInterval) -> Date { t0.addingTimeInterval(seconds) }

let roomy = Occupancy(activitiesEnabled: true, appActivities: 0, deviceActivities: 0)

func content(_ speed: Int64, staleDate: Date? = nil, relevance: Double = 0) -> ActivityContent {
    ActivityContent(state: ["speed": .integer(speed)], staleDate: staleDate, relevanceScore: relevance)
}

func request(
    _ state: ActivityContent = content(1), start: Date? = nil, alert: Alert? = nil, pushType: PushType? = nil,
    attributes: JSONValue = ["route": "Loop"]
) -> ActivityRequest {
    ActivityRequest(
        attributesType: "RideAttributes", attributes: attributes, content: state, pushType: pushType, alert: alert,
        start: start
    )
}

/// Starts an activity at `now` with default rules, failing the test on refusal.
func started(
    _ request: ActivityRequest = request(), now: Date = t0, rules: LifecycleRules = LifecycleRules(),
    id: String = "A"
) throws -> Activity {
    try Activity.request(request, id: id, bundleId: "com.example.bike", pushToken: nil, occupancy: roomy, now: now, rules: rules).0
}

extension Transition {
    var types: [EventType] { payloads.map(\.type) }
    var stateChanges: [StateChange] {
        payloads.compactMap { if case .stateChanged(let change) = $0 { change } else { nil } }
    }
}

/// A request body decoded as the server decodes one (`WireFormat.decodeRequest`).
func decodeRequest<T: Decodable>(_ type: T.Type, _ text: String) throws(IsletError) -> T {
    let bytes = Array(text.utf8)
    let result: Result<T, IsletError> = bytes.withUnsafeBytes { buffer in
        do throws(IsletError) {
            return .success(try WireFormat.decodeRequest(T.self, from: buffer))
        } catch {
            return .failure(error)
        }
    }
    return try result.get()
}
