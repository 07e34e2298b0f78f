import Foundation
import Synchronization
import IsletClient
import IsletCore
import IsletKit
import IsletTestSupport
import Testing

/// Reference 002's `LiveActivityHelper`, unchanged but for its imports, driving a live server.
@Suite("IsletKit against a live server", .serialized, .hangDetector)
struct ReferenceCodeTests {
    @Test func theArticlesHelperStartsUpdatesAndEndsABuild() async throws {
        try await withLiveServer { url, adminKey in
            Trail.mark("connecting IsletKit")
            let appKey = try await connectIsletKit(to: url, adminKey: adminKey)
            let client = IsletClient(server: url, key: appKey)
            // From the first event the server keeps (a server of this test's own): a stream
            // opened "from now" could open after the helper's update, and wait for it forever.
            // Read as they come, so a wait that runs out can say what came (this test once
            // waited idle until its 10-minute limit in full runs).
            let seen = SeenEvents()
            let reading = Task { for try await event in try await client.events(IsletClient.StreamOptions(since: 0)) { seen.append(event) } }
            defer { reading.cancel() }

            let helper = LiveActivityHelper()
            let before = Date()
            // `start()` is synchronous, as ActivityKit's request is: off the cooperative pool.
            Trail.mark("the helper's start")
            try await phase("the helper's start") { await offThePool { helper.start() } }
            let after = Date()
            let activity = try #require(helper.statusActivity)
            #expect(activity.activityState == .active)
            #expect(activity.attributes.buildId == "123456789")
            #expect(activity.content.state.status == .pending)

            // What the server keeps is what iOS would send: the Swift type's name, and the content
            // state as a default JSONEncoder writes it (an enum case as an object, a Date as
            // seconds since 2001).
            Trail.mark("reading the started activity")
            let stored = try await client.activity(activity.id)
            #expect(stored.attributesType == "StatusAttribute")
            #expect(stored.attributes == ["buildId": "123456789"])
            #expect(stored.content.state["status"] == ["pending": [:]])
            let due = try #require(stored.content.state["estimatedCompletionTime"].flatMap(Self.number))
            // The helper asks for a minute from when it starts (however long a loaded machine takes).
            #expect((before.timeIntervalSinceReferenceDate + 59)...(after.timeIntervalSinceReferenceDate + 61) ~= due)

            Trail.mark("the helper's update")
            helper.update()
            let updated = try await seen.next(.contentUpdated, of: activity.id, client: client)
            #expect(updated.data["content"]?["state"]?["status"] == ["inProgress": [:]])

            Trail.mark("the helper's end")
            helper.end(with: .succeed)
            let ended = try await seen.next(.stateChanged, of: activity.id, client: client)
            #expect(ended.data["to"] == "ended")
            #expect(try await client.activity(activity.id).content.state["status"] == ["succeed": [:]])
        }
    }

    @Test func theHelperRespectsLiveActivitiesTurnedOff() async throws {
        try await withLiveServer { url, adminKey in
            let admin = IsletClient(server: url, key: adminKey)
            let appKey = try await connectIsletKit(to: url, adminKey: adminKey)
            _ = try await admin.updateSettings(device: "default", bundleId: "com.appcircle.build", activitiesEnabled: false)
            let helper = LiveActivityHelper()
            await offThePool { helper.start() }
            #expect(helper.statusActivity == nil)
            #expect(try await IsletClient(server: url, key: appKey).activities().isEmpty)
        }
    }

    @Test func requestUpdateAndEndKeepTheActivityCurrent() async throws {
        try await withLiveServer { url, adminKey in
            let appKey = try await connectIsletKit(to: url, adminKey: adminKey)
            let first = StatusAttribute.ContentState(status: .pending, estimatedCompletionTime: Date(timeIntervalSinceReferenceDate: 800_000_000))
            let activity = try await requestBuild(StatusAttribute(buildId: "7"), ActivityContent(state: first, staleDate: nil, relevanceScore: 40), pushType: .token)
            #expect(activity.content == ActivityContent(state: first, staleDate: nil, relevanceScore: 40))
            #expect(activity.pushToken?.count == 32)
            #expect(Activity<StatusAttribute>.activities.map(\.id) == [activity.id])
            #expect(Activity<StatusAttribute>.activities.first === activity)

            let second = StatusAttribute.ContentState(status: .failed, estimatedCompletionTime: Date(timeIntervalSinceReferenceDate: 800_000_100))
            let stale = Date().addingTimeInterval(600)
            await activity.update(
                ActivityContent(state: second, staleDate: stale, relevanceScore: 90),
                alertConfiguration: AlertConfiguration(title: "Build failed", body: "3 tests", sound: .default)
            )
            #expect(activity.content.state == second)
            #expect(activity.content.relevanceScore == 90)
            #expect(abs((activity.content.staleDate ?? .distantPast).timeIntervalSince(stale)) < 0.01)
            let history = try await IsletClient(server: url, key: appKey).history(activity.id)
            #expect(history.contains { $0.type == .alert && $0.data["title"] == "Build failed" })

            // An update older than the last is ignored, and does not change what the object says.
            await activity.update(ActivityContent(state: first, staleDate: nil), timestamp: Date.distantPast.addingTimeInterval(1e9))
            #expect(activity.content.state == second)

            await activity.end(nil, dismissalPolicy: .immediate)
            #expect(activity.activityState == .dismissed)
            #expect(Activity<StatusAttribute>.activities.isEmpty)
        }
    }

    @Test func refusalsAreActivityKitsErrors() async throws {
        try await withLiveServer { url, adminKey in
            let admin = IsletClient(server: url, key: adminKey)
            _ = try await connectIsletKit(to: url, adminKey: adminKey)
            let state = StatusAttribute.ContentState(status: .pending, estimatedCompletionTime: Date())
            let huge = StatusAttribute(buildId: String(repeating: "x", count: 5000))
            await #expect(throws: ActivityAuthorizationError.attributesTooLarge) {
                try await requestBuild(huge, ActivityContent(state: state, staleDate: nil))
            }
            _ = try await admin.updateSettings(device: "default", bundleId: "com.appcircle.build", activitiesEnabled: false)
            #expect(await offThePool { ActivityAuthorizationInfo().areActivitiesEnabled } == false)
            await #expect(throws: ActivityAuthorizationError.denied) {
                try await requestBuild(StatusAttribute(buildId: "1"), ActivityContent(state: state, staleDate: nil))
            }
        }
    }

    static func number(_ value: JSONValue) -> Double? {
        switch value {
        case .number(let number): number
        case .integer(let integer): Double(integer)
        default: nil
        }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// The events a stream brought, as they came.
final class SeenEvents: Sendable {
    private let events = Mutex<[Event]>([])

    func append(_ event: Event) {
        events.withLock { $0.append(event) }
    }

    /// The first event of `type` about `activity`; after 60 s, a failure saying what came and
    /// what the server holds.
    func next(_ type: EventType, of activity: String, client: IsletClient) async throws -> Event {
        let deadline = ContinuousClock.now.advanced(by: .seconds(60))
        while ContinuousClock.now < deadline {
            if let found = events.withLock({ $0.first { $0.type == type && $0.activityId == activity } }) { return found }
            try await Task.sleep(for: .milliseconds(20))
        }
        let came = events.withLock { $0.map { "#\($0.id) \($0.type.rawValue)" } }
        let held = (try? await client.activity(activity)).map { "\($0.state.rawValue) \($0.content.state)" } ?? "unreadable"
        throw TestFailure(message: "no \(type.rawValue) event of \(activity) within 60 s; the stream brought \(came); the server holds \(held)")
    }
}

/// Runs a step that should end within 60 s; one that does not is a failure naming it, not a wait
/// until the suite's limit (the step is left running).
func phase(_ name: String, _ step: @escaping @Sendable () async -> Void) async throws {
    let finished = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
        let once = Mutex(Optional(continuation))
        Task {
            await step()
            once.withLock { $0.take() }?.resume(returning: true)
        }
        Task {
            try? await Task.sleep(for: .seconds(60))
            once.withLock { $0.take() }?.resume(returning: false)
        }
    }
    if !finished { throw TestFailure(message: "\(name) did not end within 60 s") }
}
