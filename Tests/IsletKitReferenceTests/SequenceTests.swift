import Foundation
import IsletClient
import IsletCore
import IsletKit
import IsletTestSupport
import Testing

/// IsletKit's async sequences against a live server: changes made anywhere — this process,
/// another producer over REST, the admin — arrive, in order, and keep the objects current.
/// (Getters that may ask the server, like ActivityKit's synchronous ones, run off the pool.)
// One suite with the reference code's tests: IsletConnection is one per process, so tests that
// configure it must not run at the same time.
extension ReferenceCodeTests {
    @Test func anActivitysSequencesFollowChangesFromAnywhere() async throws {
        try await withLiveServer { url, adminKey in
            let admin = IsletClient(server: url, key: adminKey)
            let appKey = try await connectIsletKit(to: url, adminKey: adminKey)
            let producer = IsletClient(server: url, key: appKey)
            let state = StatusAttribute.ContentState(status: .pending, estimatedCompletionTime: Date(timeIntervalSinceReferenceDate: 1))
            let activity = try await requestBuild(StatusAttribute(buildId: "1"), ActivityContent(state: state, staleDate: nil), pushType: .token)
            var states = await offThePool { activity.activityStateUpdates }.makeAsyncIterator()
            var contents = await offThePool { activity.contentUpdates }.makeAsyncIterator()
            var tokens = await offThePool { activity.pushTokenUpdates }.makeAsyncIterator()
            let firstToken = try #require(activity.pushToken)
            #expect(await tokens.next() == firstToken)

            // Another producer updates it, as a server or a push would.
            _ = try await producer.update(activity.id, ContentUpdate(content: IsletCore.ActivityContent(
                state: ["status": ["inProgress": [:]], "estimatedCompletionTime": 30], relevanceScore: 5
            )))
            let content = await contents.next()
            #expect(content?.state == StatusAttribute.ContentState(status: .inProgress, estimatedCompletionTime: Date(timeIntervalSinceReferenceDate: 30)))
            #expect(content?.relevanceScore == 5)
            #expect(activity.content.state.status == .inProgress)

            // The admin rotates its token.
            _ = try await admin.rotatePushToken(activity.id)
            let secondToken = await tokens.next()
            #expect(secondToken != nil && secondToken != firstToken)
            #expect(activity.pushToken == secondToken)

            // It ends elsewhere: ended, then dismissed, and the sequence is over.
            _ = try await producer.end(activity.id, EndRequest(dismissalPolicy: .immediate))
            #expect(await states.next() == .ended)
            #expect(await states.next() == .dismissed)
            #expect(await states.next() == nil)
            #expect(activity.activityState == .dismissed)
        }
    }

    @Test func activityUpdatesBringActivitiesStartedElsewhere() async throws {
        try await withLiveServer { url, adminKey in
            let appKey = try await connectIsletKit(to: url, adminKey: adminKey)
            var started = await offThePool { Activity<StatusAttribute>.activityUpdates }.makeAsyncIterator()
            let producer = IsletClient(server: url, key: appKey)
            _ = try await producer.start(ActivityRequest(attributesType: "OtherAttributes", content: IsletCore.ActivityContent(state: [:])))
            let id = try await producer.start(ActivityRequest(
                attributesType: "StatusAttribute", attributes: ["buildId": "99"],
                content: IsletCore.ActivityContent(state: ["status": ["failed": [:]], "estimatedCompletionTime": 0])
            )).id
            let activity = await started.next()
            #expect(activity?.id == id)
            #expect(activity?.attributes.buildId == "99")
            #expect(activity?.content.state.status == .failed)
        }
    }

    @Test func authorizationFollowsTheDevicesSettings() async throws {
        try await withLiveServer { url, adminKey in
            let admin = IsletClient(server: url, key: adminKey)
            _ = try await connectIsletKit(to: url, adminKey: adminKey)
            let info = ActivityAuthorizationInfo()
            var enabled = await offThePool { info.activityEnablementUpdates }.makeAsyncIterator()
            var frequent = await offThePool { info.frequentPushEnablementUpdates }.makeAsyncIterator()
            #expect(await enabled.next() == true)
            #expect(await frequent.next() == false)
            _ = try await admin.updateSettings(device: "default", bundleId: "com.appcircle.build", frequentUpdates: true)
            #expect(await frequent.next() == true)
            _ = try await admin.updateSettings(device: "default", bundleId: "com.appcircle.build", activitiesEnabled: false)
            #expect(await enabled.next() == false)
            #expect(await offThePool { info.areActivitiesEnabled } == false)

            // The push-to-start token, now and after a rotation.
            var tokens = await offThePool { Activity<StatusAttribute>.pushToStartTokenUpdates }.makeAsyncIterator()
            let first = await tokens.next()
            #expect(first?.count == 32)
            _ = try await admin.rotatePushToStartToken(device: "default", bundleId: "com.appcircle.build")
            let second = await tokens.next()
            #expect(second != nil && second != first)
        }
    }
}

extension ReferenceCodeTests {
    /// The server restarts under a running app: IsletKit reconnects, and the updates made while
    /// it was away arrive, all of them, in order.
    @Test func sequencesResumeAfterTheServerRestarts() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("islet-kit-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try await LiveServer.start(directory: directory)
        let appKey = try await connectIsletKit(to: first.url, adminKey: first.adminKey)
        let state = StatusAttribute.ContentState(status: .pending, estimatedCompletionTime: Date(timeIntervalSinceReferenceDate: 0))
        let activity = try await requestBuild(StatusAttribute(buildId: "1"), ActivityContent(state: state, staleDate: nil))
        var contents = await offThePool { activity.contentUpdates }.makeAsyncIterator()
        await activity.update(ActivityContent(state: StatusAttribute.ContentState(status: .inProgress, estimatedCompletionTime: Date(timeIntervalSinceReferenceDate: 1)), staleDate: nil))
        #expect(await contents.next()?.state.estimatedCompletionTime == Date(timeIntervalSinceReferenceDate: 1))

        await first.stop()
        let second = try await LiveServer.start(directory: directory, port: first.port)
        // Another producer updates it three times, at once, while IsletKit is still reconnecting.
        let producer = IsletClient(server: second.url, key: appKey)
        for seconds in 2...4 {
            _ = try await producer.update(activity.id, ContentUpdate(content: IsletCore.ActivityContent(
                state: ["status": ["inProgress": [:]], "estimatedCompletionTime": .integer(Int64(seconds))]
            )))
        }
        for seconds in 2...4 {
            #expect(await contents.next()?.state.estimatedCompletionTime == Date(timeIntervalSinceReferenceDate: Double(seconds)))
        }
        #expect(activity.content.state.estimatedCompletionTime == Date(timeIntervalSinceReferenceDate: 4))
        await second.stop()
    }
}

extension ReferenceCodeTests {
    /// A content state written as iOS's default JSONEncoder writes it — by a provider server, in an
    /// APNs `content-state` — decodes into the same Swift value here, and IsletKit writes exactly
    /// what iOS would.
    @Test func anIOSEncodedContentStateDecodesIntoTheSameValue() async throws {
        try await withLiveServer { url, adminKey in
            let appKey = try await connectIsletKit(to: url, adminKey: adminKey)
            let pending = StatusAttribute.ContentState(status: .pending, estimatedCompletionTime: Date(timeIntervalSinceReferenceDate: 754_000_000.25))
            let activity = try await requestBuild(StatusAttribute(buildId: "5"), ActivityContent(state: pending, staleDate: nil))
            // What the server keeps is byte for byte what JSONEncoder() makes of the value.
            let stored = try await IsletClient(server: url, key: appKey).activity(activity.id).content.state
            #expect(stored == (try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(pending))))

            // A provider's payload, as text: an enum case without raw values, a Date as seconds
            // since 2001.
            let payload = #"{"status": {"failed": {}}, "estimatedCompletionTime": 754000123.5}"#
            var contents = await offThePool { activity.contentUpdates }.makeAsyncIterator()
            _ = try await IsletClient(server: url, key: appKey).update(activity.id, ContentUpdate(content: IsletCore.ActivityContent(
                state: try JSONDecoder().decode(JSONValue.self, from: Data(payload.utf8))
            )))
            let expected = StatusAttribute.ContentState(status: .failed, estimatedCompletionTime: Date(timeIntervalSinceReferenceDate: 754_000_123.5))
            #expect(await contents.next()?.state == expected)
            #expect(try JSONDecoder().decode(StatusAttribute.ContentState.self, from: Data(payload.utf8)) == expected)
        }
    }
}
