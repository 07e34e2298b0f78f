import Foundation
import NIOHTTP1
import IsletClient
import IsletCore
import IsletServer
import IsletTestSupport
import Testing

@Suite("Activity routes", .hangDetector)
struct ActivityRouteTests {
    @Test func startReadUpdateEndAndHistory() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let activity = try await islet.start(key: key, state: ["speed": 10])
            #expect(activity.state == .active)
            #expect(activity.bundleId == "com.example.bike")
            #expect(activity.deviceId == "default")
            #expect(activity.createdAt == t0)

            let fetched = try await islet.request(.GET, "/v1/activities/\(activity.id)", key: key)
            #expect(fetched.status == 200)
            #expect(fetched.json["content"]?["state"] == ["speed": 10])

            islet.clock.advance(by: 5)
            let updated = try await islet.request(.POST, "/v1/activities/\(activity.id)/update", key: key,
                body: #"{"content":{"state":{"speed":12},"staleDate":1700000600,"relevanceScore":50},"alert":{"title":"Fast","body":"12 km/h"}}"#
            )
            #expect(updated.status == 200)
            #expect(updated.json["content"] == ["state": ["speed": 12], "staleDate": 1_700_000_600, "relevanceScore": 50])
            #expect(updated.json["lastUpdateTimestamp"] == 1_700_000_005)

            let ended = try await islet.request(.POST, "/v1/activities/\(activity.id)/end", key: key,
                body: #"{"content":{"state":{"speed":0}},"dismissalPolicy":{"after":1700000900}}"#
            )
            #expect(ended.status == 200)
            #expect(ended.json["activityState"] == "ended")
            #expect(ended.json["dismissAt"] == 1_700_000_900)

            let history = try await islet.request(.GET, "/v1/activities/\(activity.id)/events", key: key)
            let types = history.json["events"].flatMap { events -> [String]? in
                guard case .array(let list) = events else { return nil }
                return list.compactMap { $0["type"]?.stringValue }
            }
            #expect(types == ["started", "contentUpdated", "alert", "contentUpdated", "stateChanged"])
        }
    }

    @Test func endWithoutBodyUsesTheDefaultPolicy() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let activity = try await islet.start(key: key)
            let ended = try await islet.request(.POST, "/v1/activities/\(activity.id)/end", key: key)
            #expect(ended.status == 200)
            #expect(ended.json["dismissAt"] == .integer(Int64(t0.timeIntervalSince1970) + 4 * 3600))
        }
    }

    @Test func listIsScopedFilteredAndInRelevanceOrder() async throws {
        try await withIslet { islet in
            let bike = try await islet.createApp("com.example.bike")
            let ci = try await islet.createApp("com.example.ci")
            let low = try await islet.start(key: bike, extra: #","device":"default""#)
            let high = try await islet.start(key: bike, state: ["speed": 2])
            _ = try await islet.request(.POST, "/v1/activities/\(high.id)/update", key: bike, body: #"{"content":{"state":{"speed":2},"relevanceScore":90}}"#
            )
            islet.clock.advance(by: 1)
            let build = try await islet.start(key: ci)
            _ = try await islet.request(.POST, "/v1/activities/\(build.id)/end", key: ci)

            func ids(_ path: String, key: String) async throws -> [String] {
                let reply = try await islet.request(.GET, path, key: key)
                guard case .array(let list) = reply.json["activities"] else { return [] }
                return list.compactMap { $0["id"]?.stringValue }
            }
            #expect(try await ids("/v1/activities", key: bike) == [high.id, low.id])
            #expect(try await ids("/v1/activities", key: islet.admin) == [high.id, low.id, build.id])
            #expect(try await ids("/v1/activities?bundleId=com.example.bike", key: ci) == [build.id])
            #expect(try await ids("/v1/activities?state=ended", key: islet.admin) == [build.id])
            #expect(try await ids("/v1/activities?state=active,stale&limit=1", key: islet.admin) == [high.id])
            #expect(try await ids("/v1/activities?type=Other", key: islet.admin) == [])
            #expect(try await ids("/v1/activities?device=default", key: bike) == [high.id, low.id])
        }
    }

    @Test func listingsComeAPageAtATime() async throws {
        try await withIslet { islet in
            let bike = try await islet.createApp("com.example.bike")
            let ci = try await islet.createApp("com.example.ci")
            var started: [String] = []
            for speed in 0..<5 {
                started.append(try await islet.start(key: bike, state: ["speed": .integer(Int64(speed))]).id)
                islet.clock.advance(by: 1)
            }
            let other = try await islet.start(key: ci)

            /// Every page of a listing, following `next`: the items' ids (or the member's
            /// `field`), and how many pages it took.
            func walk(_ path: String, key: String, member: String, field: String = "id") async throws -> (ids: [String], pages: Int) {
                var ids: [String] = []
                var pages = 0
                var cursor: String?
                repeat {
                    let separator = path.contains("?") ? "&" : "?"
                    let reply = try await islet.request(.GET, path + separator + "limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""), key: key)
                    #expect(reply.status == 200, "\(path): \(reply.text)")
                    guard case .array(let list) = reply.json[member] else { break }
                    #expect(list.count <= 2)
                    ids += list.compactMap { $0[field]?.stringValue ?? $0[field].map { "\($0)" } }
                    pages += 1
                    cursor = reply.json["next"]?.stringValue
                } while cursor != nil && pages < 20
                return (ids, pages)
            }
            // Equal scores: the earliest started first, as a device shows them.
            let own = try await walk("/v1/activities", key: bike, member: "activities")
            #expect(own.ids == started)
            #expect(own.pages == 3)
            #expect(try await walk("/v1/activities", key: islet.admin, member: "activities").ids == started + [other.id])
            #expect(try await walk("/v1/activities?bundleId=com.example.ci", key: islet.admin, member: "activities").ids == [other.id])
            #expect(try await walk("/v1/activities?q=\(started[3].prefix(6).lowercased())", key: bike, member: "activities").ids.contains(started[3]))
            // The last page says so by having no `next`; exactly full, it still does.
            let exact = try await islet.request(.GET, "/v1/activities?limit=6", key: islet.admin)
            #expect(exact.json["next"] == nil)

            #expect(try await walk("/v1/apps", key: islet.admin, member: "apps", field: "bundleId").ids == ["com.example.bike", "com.example.ci"])
            #expect(try await walk("/v1/apps", key: ci, member: "apps", field: "bundleId").ids == ["com.example.ci"])
            for name in ["kitchen", "car", "watch"] {
                _ = try await islet.request(.POST, "/v1/devices", key: islet.admin, body: #"{"id":"\#(name)"}"#)
            }
            #expect(try await walk("/v1/devices", key: islet.admin, member: "devices").ids == ["car", "default", "kitchen", "watch"])

            for speed in 10..<14 {
                _ = try await islet.request(.POST, "/v1/activities/\(started[0])/update", key: bike, body: #"{"content":{"state":{"speed":\#(speed)}}}"#)
            }
            let history = try await walk("/v1/activities/\(started[0])/events", key: bike, member: "events", field: "type")
            #expect(history.ids == ["started"] + Array(repeating: "contentUpdated", count: 4))
            #expect(history.pages == 3)
            // A cursor from one listing means nothing to another.
            let page = try await islet.request(.GET, "/v1/activities?limit=1", key: bike)
            let cursor = try #require(page.json["next"]?.stringValue)
            #expect(try await islet.request(.GET, "/v1/devices?cursor=\(cursor)", key: islet.admin).reason == "invalidRequest")
        }
    }

    @Test func adminActsForANamedApp() async throws {
        try await withIslet { islet in
            _ = try await islet.createApp("com.example.bike")
            let body = #"{"bundleId":"com.example.bike","attributesType":"T","content":{"state":{}}}"#
            let started = try await islet.request(.POST, "/v1/activities", key: islet.admin, body: body)
            #expect(started.status == 201)
            #expect(started.json["bundleId"] == "com.example.bike")
            let unnamed = try await islet.request(.POST, "/v1/activities", key: islet.admin, body: #"{"attributesType":"T","content":{"state":{}}}"#
            )
            #expect(unnamed.status == 400)
            #expect(unnamed.reason == "invalidRequest")
            let unknown = try await islet.request(.POST, "/v1/activities", key: islet.admin,
                body: #"{"bundleId":"com.example.none","attributesType":"T","content":{"state":{}}}"#
            )
            #expect(unknown.status == 404)
            #expect(unknown.reason == "appNotFound")
        }
    }

    @Test func appKeyCannotActForAnotherApp() async throws {
        try await withIslet { islet in
            let bike = try await islet.createApp("com.example.bike")
            let ci = try await islet.createApp("com.example.ci")
            let reply = try await islet.request(.POST, "/v1/activities", key: bike, body: #"{"bundleId":"com.example.ci","attributesType":"T","content":{"state":{}}}"#
            )
            #expect(reply.status == 403)
            #expect(reply.reason == "forbidden")
            // Another app's activity does not exist for this key, whatever the route.
            let theirs = try await islet.start(key: ci)
            for (method, path, body) in [
                (HTTPMethod.GET, "/v1/activities/\(theirs.id)", nil),
                (.POST, "/v1/activities/\(theirs.id)/update", #"{"content":{"state":{"speed":9}}}"#),
                (.POST, "/v1/activities/\(theirs.id)/end", nil),
                (.GET, "/v1/activities/\(theirs.id)/events", nil),
            ] as [(HTTPMethod, String, String?)] {
                let reply = try await islet.request(method, path, key: bike, body: body)
                #expect(reply.status == 404, "\(path)")
                #expect(reply.reason == "activityNotFound")
            }
            let untouched = try await islet.request(.GET, "/v1/activities/\(theirs.id)", key: ci)
            #expect(untouched.json["content"]?["state"] == ["speed": 1])
            #expect(untouched.json["activityState"] == "active")
        }
    }

    @Test func startOrUpdateByKey() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.ci")
            let step = { (state: String, extra: String) in
                try await islet.request(.PUT, "/v1/activities/by-key/pipeline-42", key: key,
                    body: #"{"attributesType":"Build","attributes":{"job":42},"content":{"state":{"status":"\#(state)"}}\#(extra)}"#
                )
            }
            let first = try await step("pending", "")
            #expect(first.status == 201)
            let second = try await step("running", "")
            #expect(second.status == 200)
            #expect(second.json["id"] == first.json["id"])
            #expect(second.json["key"] == "pipeline-42")
            let last = try await step("succeeded", #","end":true,"dismissalPolicy":"immediate""#)
            #expect(last.status == 200)
            #expect(last.json["activityState"] == "dismissed")
            #expect(last.json["content"]?["state"] == ["status": "succeeded"])
            let rerun = try await step("pending", "")
            #expect(rerun.status == 201)
            #expect(rerun.json["id"] != first.json["id"])

            let lonePolicy = try await step("x", #","dismissalPolicy":"immediate""#)
            #expect(lonePolicy.status == 400)
        }
    }

    @Test func anUpdateByKeyIsRefusedWhatAStartWouldBe() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.ci")
            let path = "/v1/activities/by-key/pipeline-42"
            let started = try await islet.request(.PUT, path, key: key, body: #"{"attributesType":"Build","content":{"state":{}}}"#)
            #expect(started.status == 201)
            // With a live activity under the key these only update its content, and were taken.
            for body in [
                #"{"attributesType":"","content":{"state":{}}}"#, #"{"attributesType":"Build","attributes":[1],"content":{"state":{}}}"#,
            ] {
                let reply = try await islet.request(.PUT, path, key: key, body: body)
                #expect(reply.status == 400, "\(body): \(reply.text)")
                #expect(reply.reason == "invalidRequest")
            }
        }
    }

    @Test func dismissIsTheAdminsAndEndsTheActivity() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let activity = try await islet.start(key: key)
            let refused = try await islet.request(.POST, "/v1/activities/\(activity.id)/dismiss", key: key)
            #expect(refused.status == 403)
            #expect(refused.reason == "forbidden")
            let dismissed = try await islet.request(.POST, "/v1/activities/\(activity.id)/dismiss", key: islet.admin)
            #expect(dismissed.status == 200)
            #expect(dismissed.json["activityState"] == "dismissed")
            let again = try await islet.request(.POST, "/v1/activities/\(activity.id)/dismiss", key: islet.admin)
            #expect(again.status == 409)
            #expect(again.reason == "activityDismissed")
        }
    }

    /// A real phone's app reports what ActivityKit told it: an end on the phone, then the
    /// person's dismissal; said again, or after the fact, it changes nothing. The app's key, the
    /// device's key and the admin may report; another app's or device's key finds nothing, and
    /// says the same of an activity that never was.
    @Test func aPhoneReportsAnEndAndTheDismissalAndOthersCannot() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let other = try await islet.createApp("com.example.other")
            _ = try await islet.request(.POST, "/v1/devices", key: islet.admin, body: #"{"id":"kitchen"}"#)
            let kitchen = try #require(try await islet.request(.POST, "/v1/devices/kitchen/key", key: islet.admin).json["key"]?.stringValue)
            let phone = try #require(try await islet.request(.POST, "/v1/devices/default/key", key: islet.admin).json["key"]?.stringValue)
            let activity = try await islet.start(key: key)
            let path = "/v1/activities/\(activity.id)/phone-report"
            for stranger in [other, kitchen] {
                let refused = try await islet.request(.POST, path, key: stranger, body: #"{"state":"ended"}"#)
                let none = try await islet.request(.POST, "/v1/activities/\(UUID().uuidString)/phone-report", key: stranger, body: #"{"state":"ended"}"#)
                #expect(refused.reason == "activityNotFound" && none.reason == "activityNotFound", "\(refused.text)")
            }
            #expect(try await islet.request(.POST, path, key: key, body: #"{"state":"gone"}"#).status == 400)
            #expect(try await islet.request(.POST, path, body: #"{"state":"ended"}"#).reason == "unauthorized")

            let ended = try await islet.request(.POST, path, key: key, body: #"{"state":"ended"}"#)
            #expect(ended.status == 200 && ended.json["activityState"] == "ended", "\(ended.text)")
            // The default policy: up to four hours on the Lock Screen.
            #expect(ended.json["dismissAt"] == .integer(Int64(t0.timeIntervalSince1970) + 4 * 3600), "\(ended.json)")
            #expect(try await islet.request(.POST, path, key: phone, body: #"{"state":"ended"}"#).json["activityState"] == "ended")
            let dismissed = try await islet.request(.POST, path, key: phone, body: #"{"state":"dismissed"}"#)
            #expect(dismissed.status == 200 && dismissed.json["activityState"] == "dismissed")
            let late = try await islet.request(.POST, path, key: islet.admin, body: #"{"state":"ended"}"#)
            #expect(late.status == 200 && late.json["activityState"] == "dismissed")
            // The history says who: the phone, then the person.
            let changes = try await islet.request(.GET, "/v1/activities/\(activity.id)/events", key: key).json["events"]?.arrayValue ?? []
            let reasons = changes.filter { $0["type"] == "stateChanged" }.compactMap { $0["data"]?["reason"]?.stringValue }
            #expect(reasons == ["endedOnPhone", "userDismissed"], "\(reasons)")
        }
    }

    /// A start says how it came: `api` unless the app started it on the phone itself (`phone`,
    /// and no push-to-start is sent); `push-to-start` is Islet's own, which no caller may claim.
    @Test func aStartSaysWhetherThePhoneStartedIt() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            #expect(try await islet.start(key: key).source == .api)
            #expect(try await islet.start(key: key, extra: #","source":"phone""#).source == .phone)
            let claimed = try await islet.request(
                .POST, "/v1/activities", key: key,
                body: #"{"attributesType":"RideAttributes","content":{"state":{}},"source":"push-to-start"}"#
            )
            #expect(claimed.status == 400 && claimed.text.contains("push-to-start"), "\(claimed.text)")
        }
    }

    /// Whoever may not dismiss an activity learns nothing from trying: an app's key, a request
    /// through a proxy, and any request without a key on a server that asks for one get the same
    /// answer for an activity that exists as for one that never did; another device's key gets
    /// `activityNotFound` for both, as an app's key does for another app's activity.
    @Test func aDismissalThatMayNotBeMadeSaysNothingOfWhetherTheActivityExists() async throws {
        for keylessLoopback in [true, false] {
            try await withIslet({ $0.server.keylessLoopback = keylessLoopback }) { islet in
                let key = try await islet.createApp("com.example.bike")
                let activity = try await islet.start(key: key)
                _ = try await islet.request(.POST, "/v1/devices", key: islet.admin, body: #"{"id":"kitchen"}"#)
                let kitchen = try #require(try await islet.request(.POST, "/v1/devices/kitchen/key", key: islet.admin).json["key"]?.stringValue)
                let callers: [[(String, String)]] =
                    keylessLoopback
                    ? [[("Authorization", "Bearer \(key)")], [("Authorization", "Bearer \(kitchen)")], [("X-Forwarded-For", "203.0.113.7")]]
                    : [[]]
                let madeUp = UUID().uuidString
                for headers in callers {
                    let real = try await islet.request(.POST, "/v1/activities/\(activity.id)/dismiss", body: "{}", headers: headers)
                    let none = try await islet.request(.POST, "/v1/activities/\(madeUp)/dismiss", body: "{}", headers: headers)
                    #expect(real.status >= 400, "\(headers): \(real.text)")
                    #expect(
                        real.status == none.status && real.text == none.text.replacingOccurrences(of: madeUp, with: activity.id),
                        "\(headers): \(real.text) / \(none.text)"
                    )
                }
                let kitchenAnswer = try await islet.request(.POST, "/v1/activities/\(activity.id)/dismiss", key: kitchen, body: "{}")
                #expect(kitchenAnswer.reason == "activityNotFound", "\(kitchenAnswer.text)")
                #expect(try await islet.request(.GET, "/v1/activities/\(activity.id)", key: key).json["activityState"] == "active")
            }
        }
    }

    @Test func lifecycleRefusalsAreConflictsAndRecorded() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let activity = try await islet.start(key: key)
            let path = "/v1/activities/\(activity.id)"
            _ = try await islet.request(.POST, path + "/update", key: key, body: #"{"content":{"state":{"speed":5}},"timestamp":1700000100}"#)

            let older = try await islet.request(.POST, path + "/update", key: key, body: #"{"content":{"state":{"speed":3}},"timestamp":1700000050}"#)
            #expect(older.status == 409)
            #expect(older.reason == "olderTimestamp")

            let ahead = try await islet.request(.POST, path + "/update", key: key, body: #"{"content":{"state":{"speed":3}},"timestamp":1800000000}"#)
            #expect(ahead.status == 409)
            #expect(ahead.reason == "timestampTooFarAhead")

            _ = try await islet.request(.POST, path + "/end", key: key)
            let afterEnd = try await islet.request(.POST, path + "/update", key: key, body: #"{"content":{"state":{"speed":3}}}"#)
            #expect(afterEnd.status == 409)
            #expect(afterEnd.reason == "activityEnded")
            let endAgain = try await islet.request(.POST, path + "/end", key: key)
            #expect(endAgain.reason == "activityEnded")

            let current = try await islet.request(.GET, path, key: key)
            #expect(current.json["content"]?["state"] == ["speed": 5])
            let history = try await islet.isletClient(key: key).history(activity.id)
            let ignored = history.filter { $0.type == .updateIgnored }.compactMap { $0.data["reason"]?.stringValue }
            #expect(ignored == ["olderTimestamp", "timestampTooFarAhead", "activityEnded", "activityEnded"])

            _ = try await islet.request(.POST, path + "/dismiss", key: islet.admin)
            let afterDismiss = try await islet.request(.POST, path + "/update", key: key, body: #"{"content":{"state":{"speed":3}}}"#)
            #expect(afterDismiss.reason == "activityDismissed")
        }
    }

    @Test func scheduledActivityIsPendingUntilItsStartAndCannotBeDismissed() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let activity = try await islet.start(
                key: key, extra: #","start":1700000600,"alert":{"title":"Ride","body":"Starting soon"}"#
            )
            #expect(activity.state == .pending)
            let dismiss = try await islet.request(.POST, "/v1/activities/\(activity.id)/dismiss", key: islet.admin)
            #expect(dismiss.status == 409)
            #expect(dismiss.reason == "activityPending")

            let noAlert = try await islet.request(.POST, "/v1/activities", key: key,
                body: #"{"attributesType":"T","content":{"state":{}},"start":1700000600}"#
            )
            #expect(noAlert.reason == "invalidRequest")

            let stream = try await islet.isletClient(key: key).events(.init(filter: EventFilter(activityId: activity.id)))
            islet.clock.advance(by: 600)
            let events = try await within { try await collect(stream, count: 2) }
            #expect(events.map(\.type) == [.stateChanged, .alert])
            #expect(events[0].data["to"] == "active")
            #expect(try await islet.isletClient(key: key).activity(activity.id).state == .active)
        }
    }

    @Test func anActivityIsNamedByItsIdInAnyCaseOrItsFirstCharacters() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let activity = try await islet.start(key: key)
            let short = String(activity.id.prefix(8)).lowercased()
            #expect(try await islet.request(.GET, "/v1/activities/\(activity.id.lowercased())", key: key).json["id"]?.stringValue == activity.id)
            #expect(try await islet.request(.GET, "/v1/activities/\(short)", key: key).json["id"]?.stringValue == activity.id)
            let update = try await islet.request(.POST, "/v1/activities/\(short)/update", key: key, body: #"{"content":{"state":{"speed":2}}}"#)
            #expect(update.status == 200)
            #expect(try await islet.request(.GET, "/v1/activities/\(short)/events", key: key).status == 200)
            #expect(try await islet.request(.POST, "/v1/activities/\(short)/dismiss", key: islet.admin, body: "{}").status == 200)
            // Too short to mean anything; not an id at all; another app's.
            #expect(try await islet.request(.GET, "/v1/activities/\(short.prefix(3))", key: key).reason == "invalidRequest")
            #expect(try await islet.request(.GET, "/v1/activities/nosuch", key: key).reason == "activityNotFound")
            let other = try await islet.createApp("com.example.ci")
            #expect(try await islet.request(.GET, "/v1/activities/\(short)", key: other).reason == "activityNotFound")
            // The display dismisses by whole id only.
            #expect(try await islet.request(.POST, "/v1/activities/\(short)/dismiss", body: "{}").reason == "activityNotFound")
        }
    }

    @Test func tokenPushTypeGetsAPushToken() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let activity = try await islet.start(key: key, extra: #","pushType":"token""#)
            let token = try #require(activity.pushToken)
            #expect(token.count == 64)
            #expect(token.allSatisfy { $0.isHexDigit })
            let channel = try await islet.request(.POST, "/v1/activities", key: key, body: #"{"attributesType":"T","content":{"state":{}},"pushType":{"channel":"abc="}}"#
            )
            #expect(channel.status == 404)
            #expect(channel.reason == "channelNotFound")
        }
    }

    @Test func limitsAndSizeAreRefusedAndChangeNothing() async throws {
        try await withIslet({ configuration in
            configuration.lifecycle.maxActivitiesPerApp = 1
            configuration.lifecycle.maxActivitiesPerDevice = 2
        }) { islet in
            let bike = try await islet.createApp("com.example.bike")
            let ci = try await islet.createApp("com.example.ci")
            let news = try await islet.createApp("com.example.news")
            let first = try await islet.start(key: bike)
            let second = try await islet.request(.POST, "/v1/activities", key: bike, body: #"{"attributesType":"T","content":{"state":{}}}"#
            )
            #expect(second.status == 409)
            #expect(second.reason == "targetMaximumExceeded")
            _ = try await islet.start(key: ci)
            let third = try await islet.request(.POST, "/v1/activities", key: news, body: #"{"attributesType":"T","content":{"state":{}}}"#
            )
            #expect(third.status == 409)
            #expect(third.reason == "globalMaximumExceeded")

            let big = String(repeating: "x", count: 4100)
            let tooLarge = try await islet.request(.POST, "/v1/activities/\(first.id)/update", key: bike, body: #"{"content":{"state":{"note":"\#(big)"}}}"#
            )
            #expect(tooLarge.status == 413)
            #expect(tooLarge.reason == "attributesTooLarge")
            let list = try await islet.isletClient(key: islet.admin).activities()
            #expect(list.count == 2)
            #expect(list.first { $0.id == first.id }?.content.state == ["speed": 1])
            #expect(try await islet.isletClient(key: bike).history(first.id).count == 1)
        }
    }

    @Test func disabledAppIsDenied() async throws {
        try await withIslet { islet in
            let key = try await islet.createApp("com.example.bike")
            let running = try await islet.start(key: key)
            let off = try await islet.request(.PUT, "/v1/devices/default/settings", key: islet.admin,
                body: #"{"bundleId":"com.example.bike","activitiesEnabled":false}"#
            )
            #expect(off.status == 200)
            #expect(off.json["activitiesEnabled"] == false)
            let denied = try await islet.request(.POST, "/v1/activities", key: key, body: #"{"attributesType":"T","content":{"state":{}}}"#
            )
            #expect(denied.status == 403)
            #expect(denied.reason == "denied")
            #expect(try await islet.isletClient(key: key).activity(running.id).state == .dismissed)
        }
    }
}


