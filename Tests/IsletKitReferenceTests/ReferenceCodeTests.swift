import Foundation
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
            let appKey = try await connectIsletKit(to: url, adminKey: adminKey)
            let client = IsletClient(server: url, key: appKey)
            // From the first event the server keeps (a server of this test's own): a stream
            // opened "from now" could open after the helper's update, and wait for it forever.
            var events = try await client.events(IsletClient.StreamOptions(since: 0)).makeAsyncIterator()

            let helper = LiveActivityHelper()
            let before = Date()
            // `start()` is synchronous, as ActivityKit's request is: off the cooperative pool.
            await offThePool { helper.start() }
            let after = Date()
            let activity = try #require(helper.statusActivity)
            #expect(activity.activityState == .active)
            #expect(activity.attributes.buildId == "123456789")
            #expect(activity.content.state.status == .pending)

            // What the server keeps is what iOS would send: the Swift type's name, and the content
            // state as a default JSONEncoder writes it (an enum case as an object, a Date as
            // seconds since 2001).
            let stored = try await client.activity(activity.id)
            #expect(stored.attributesType == "StatusAttribute")
            #expect(stored.attributes == ["buildId": "123456789"])
            #expect(stored.content.state["status"] == ["pending": [:]])
            let due = try #require(stored.content.state["estimatedCompletionTime"].flatMap(Self.number))
            // The helper asks for a minute from when it starts (however long a loaded machine takes).
            #expect((before.timeIntervalSinceReferenceDate + 59)...(after.timeIntervalSinceReferenceDate + 61) ~= due)

            helper.update()
            let updated = try await Self.next(.contentUpdated, in: &events)
            #expect(updated.data["content"]?["state"]?["status"] == ["inProgress": [:]])

            helper.end(with: .succeed)
            let ended = try await Self.next(.stateChanged, in: &events)
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

    static func next(_ type: EventType, in events: inout AsyncThrowingStream<Event, any Error>.Iterator) async throws -> Event {
        while let event = try await events.next() {
            if event.type == type { return event }
        }
        throw TestFailure(message: "the stream ended before a \(type) event")
    }
}

struct TestFailure: Error {
    var message: String
}
