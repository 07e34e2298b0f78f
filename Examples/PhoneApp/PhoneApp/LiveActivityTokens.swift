#if canImport(ActivityKit)
import ActivityKit
#else
import IsletKit
#endif
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What an iOS app does so that Islet can drive its Live Activities through Apple's APNs:
/// report the push-to-start token of its activity type, and the update token of every activity
/// that starts — including one Islet started by push-to-start, whose Islet id is in its
/// attributes (`islet`). Paste it into your app (README, "Driving real iPhones"); on Linux it
/// compiles against IsletKit, which plays ActivityKit against an Islet that plays the phone.
public struct LiveActivityTokens: Sendable {
    /// Islet's base URL: the backend, not Apple.
    public var backend: URL
    /// The app's Islet API key (`islet apps create` printed it).
    public var apiKey: String
    /// This phone's id at Islet: any stable id the app chooses (a user's id and a device name, a
    /// UUID kept in the keychain).
    public var deviceId: String
    /// Which APNs environment the app is built for: `development` from Xcode, `production` from
    /// TestFlight and the App Store (the `aps-environment` entitlement).
    public var environment: String
    /// Where the reporter says what it did.
    public var log: @Sendable (String) -> Void

    public init(
        backend: URL, apiKey: String, deviceId: String, environment: String = "development",
        log: @escaping @Sendable (String) -> Void = { print($0) }
    ) {
        self.backend = backend
        self.apiKey = apiKey
        self.deviceId = deviceId
        self.environment = environment
        self.log = log
    }

    /// Reports tokens as iOS hands them out, until cancelled.
    public func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask {
                var reported: Data?
                for await token in Activity<DeliveryAttributes>.pushToStartTokenUpdates where token != reported {
                    await report(pushToStartToken: token)
                    reported = token
                }
            }
            // The activities already there (the app was relaunched), then each new one.
            for activity in Activity<DeliveryAttributes>.activities {
                group.addTask { await follow(activity) }
            }
            for await activity in Activity<DeliveryAttributes>.activityUpdates {
                group.addTask { await follow(activity) }
            }
        }
    }

    /// Reports each update token of one activity, and what Islet cannot see: the person
    /// dismissed it, or it ended on the phone (an `activity.dismissed` webhook `by: person`, an
    /// `activity.ended` `by: phone`, docs/webhooks.md).
    private func follow(_ activity: Activity<DeliveryAttributes>) async {
        // An activity Islet started by push-to-start says which one it is; one the app started
        // itself is reported by the app when it asks Islet to start it (not shown here).
        guard let islet = activity.attributes.islet else { return }
        log("activity \(islet) started on this phone (order \(activity.attributes.orderNumber))")
        await withDiscardingTaskGroup { group in
            group.addTask {
                var reported: Data?
                for await token in activity.pushTokenUpdates where token != reported {
                    await send("PUT", "/v1/activities/\(islet)/push-token", ["token": token.hex, "device": deviceId], what: "update token of \(islet)")
                    reported = token
                }
            }
            group.addTask {
                var reported: String?
                for await state in activity.activityStateUpdates {
                    let seen: String
                    switch state {
                    case .ended: seen = "ended"
                    case .dismissed: seen = "dismissed"
                    default: continue
                    }
                    if seen != reported {
                        await send("POST", "/v1/activities/\(islet)/phone-report", ["state": seen], what: "\(seen) state of \(islet)")
                        reported = seen
                    }
                    if state == .dismissed { return }
                }
            }
        }
    }

    private func report(pushToStartToken token: Data) async {
        await send(
            "PUT", "/v1/devices/\(deviceId)/push-to-start-tokens/\(String(describing: DeliveryAttributes.self))",
            ["token": token.hex, "environment": environment], what: "push-to-start token"
        )
    }

    /// Sends a report to Islet, trying again (1 s, doubling to a minute) until it is taken: a
    /// token that does not reach the backend is an activity that never updates.
    private func send(_ method: String, _ path: String, _ body: [String: String], what: String) async {
        var request = URLRequest(url: backend.appendingPathComponent(path))
        request.httpMethod = method
        request.setValue("Bearer \(apiKey)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try? JSONEncoder().encode(body)
        var wait: Double = 1
        while !Task.isCancelled {
            do {
                let (data, response) = try await URLSession.shared.data(for: request)
                let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                if (200..<300).contains(status) {
                    log("reported the \(what)\(body["token"].map { " (\($0.prefix(8))…)" } ?? "")")
                    return
                }
                let answer = String(decoding: data, as: UTF8.self)
                log("Islet refused the \(what): \(status) \(answer)")
                // A refusal of the request itself will not change by trying again.
                if (400..<500).contains(status), status != 429 { return }
            } catch {
                log("could not report the \(what): \(error.localizedDescription); trying again in \(Int(wait)) s")
            }
            try? await Task.sleep(for: .seconds(wait))
            wait = min(60, wait * 2)
        }
    }
}

extension Data {
    /// The token as APNs and Islet write it: lowercase hexadecimal.
    var hex: String { map { String(format: "%02x", $0) }.joined() }
}
