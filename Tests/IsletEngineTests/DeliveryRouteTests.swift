import Foundation
import IsletCore
@testable import IsletEngine
import IsletTestSupport
import Testing

/// The claim side of a delivery's state machine (`DeliveryContext.route`), row by row: a
/// context as the claim reads it, and where the delivery goes from it alone.
@Suite("Where a claimed delivery goes", .hangDetector)
struct DeliveryRouteTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let app: BundleID = "com.example.bike"

    static func delivery(
        _ event: Delivery.Event, order: Delivery.Order = .activity("A1"), alert: Bool = false, expiration: Date? = now.addingTimeInterval(3600)
    ) -> Delivery {
        Delivery(
            id: 7, order: order, activityId: "A1", bundleId: app, deviceId: "phone", event: event, payload: "{}", alert: alert,
            expiration: expiration, nextAttemptAt: now, createdAt: now
        )
    }

    static func credential(_ environment: APNsEnvironment = .production, failure: String? = nil) -> StoredCredential {
        StoredCredential(
            credential: DeliveryCredential(bundleId: app, environment: environment, teamId: "TEAM", keyId: "KEY", createdAt: now, failure: failure),
            privateKey: "(key)"
        )
    }

    static func token(_ kind: PhoneToken.Kind, _ environment: APNsEnvironment = .production) -> PhoneToken {
        PhoneToken(token: kind == .update ? "aa11" : "bb22", kind: kind, bundleId: app, deviceId: "phone", environment: environment, createdAt: now)
    }

    static func iPhone(
        token: PhoneToken? = token(.update), state: PhoneActivity.State = .active, successor: (id: ActivityID, shown: Bool)? = nil,
        paused: Bool = false, credentials: [StoredCredential] = [credential()], spent: Int = 0, budget: Int = 12
    ) -> DeliveryContext.Destination {
        .iPhone(DeliveryContext.IPhone(
            phone: PhoneActivity(activityId: "A1", bundleId: app, deviceId: "phone", environment: .production, state: state),
            attributesType: "RideAttributes", token: token, successor: successor,
            app: DeliveryContext.App(bundleId: app, paused: paused, credentials: credentials), spent: spent, budget: budget
        ))
    }

    static func route(_ delivery: Delivery, to destination: DeliveryContext.Destination) -> DeliveryRoute {
        DeliveryContext(delivery: delivery, now: now, destination: destination).route()
    }

    /// What a route comes to, for comparing: `send <priority> <target>`, `hold …`, `fail …`.
    static func shown(_ route: DeliveryRoute) -> String {
        switch route {
        case .send(let outbound, let priority, let environment, let target):
            let request: String
            switch outbound {
            case .apns(let apns): request = "apns \(apns.priority) exp=\(apns.expiration.map { "\(Int($0.timeIntervalSince1970))" } ?? "-")"
            case .fcm(let fcm): request = "fcm \(fcm.address.field) ttl=\(Int(fcm.ttl))"
            }
            return "send \(request) \(priority) \(environment.rawValue) \(target)"
        case .hold(let hold): return "hold \(hold)"
        case .fail(let failure): return "fail \(failure)"
        }
    }

    @Test func anIPhonesActivityGoesToItsUpdateTokenWithItsEnvironmentsCredential() {
        #expect(Self.shown(Self.route(Self.delivery(.update), to: Self.iPhone())) == "send apns 10 exp=1800003600 withinBudget(left: 12, budget: 12) production updateToken(\"aa11\")")
        // A development token takes the development credential, not production's.
        let development = Self.iPhone(token: Self.token(.update, .development), credentials: [Self.credential(.production), Self.credential(.development)])
        guard case .send(.apns(let request), _, .development, _) = Self.route(Self.delivery(.update), to: development) else {
            Issue.record("not sent to development")
            return
        }
        #expect(request.credential.credential.environment == .development)
    }

    @Test func theBudgetSetsAnUpdatesPriority() {
        let rows: [(event: Delivery.Event, alert: Bool, spent: Int, expected: DeliveryPriority)] = [
            (.update, false, 0, .withinBudget(left: 12, budget: 12)),
            (.update, false, 8, .withinBudget(left: 4, budget: 12)),
            (.update, false, 9, .keptForAlerts(left: 3, budget: 12)),
            (.update, false, 12, .budgetSpent(budget: 12)),
            (.update, false, 40, .budgetSpent(budget: 12)),
            (.update, true, 11, .alert(left: 1, budget: 12)),
            (.update, true, 12, .alertPastBudget(budget: 12)),
            (.end, false, 12, .end(left: 0, budget: 12)),
        ]
        for row in rows {
            let route = Self.route(Self.delivery(row.event, alert: row.alert), to: Self.iPhone(spent: row.spent))
            guard case .send(.apns(let request), let priority, _, _) = route else {
                Issue.record("\(row): \(Self.shown(route))")
                continue
            }
            #expect(priority == row.expected, "\(row)")
            #expect(request.priority == row.expected.value, "\(row)")
        }
        #expect(DeliveryPriority.keptForAlerts(left: 3, budget: 12).value == 5 && DeliveryPriority.end(left: 0, budget: 12).value == 10)
    }

    @Test func aStartGoesToThePushToStartTokenOrFails() {
        let start = Self.route(Self.delivery(.start), to: Self.iPhone(token: Self.token(.pushToStart), spent: 12))
        #expect(Self.shown(start) == "send apns 10 exp=1800003600 start production pushToStartToken(\"bb22\")")
        #expect(Self.shown(Self.route(Self.delivery(.start), to: Self.iPhone(token: nil))) == "fail noPushToStartToken(attributesType: \"RideAttributes\")")
        // A start does not ask whether the activity's token was retired: it has none yet.
        #expect(Self.shown(Self.route(Self.delivery(.start), to: Self.iPhone(token: Self.token(.pushToStart), state: .tokenRetired))).hasPrefix("send "))
    }

    @Test func whatIsMissingHoldsAndWhatIsGoneFails() {
        let rows: [(Delivery, DeliveryContext.Destination, String)] = [
            (Self.delivery(.update), .noPhone, "fail noPhone"),
            (Self.delivery(.update, expiration: Self.now), Self.iPhone(), "fail expired"),
            (Self.delivery(.update), Self.iPhone(state: .tokenRetired), "fail tokenRetired(IsletCore.DevicePlatform.ios)"),
            (Self.delivery(.update), Self.iPhone(token: nil), "hold noUpdateToken(\"A1\")"),
            (Self.delivery(.update), Self.iPhone(paused: true), "hold paused(\"com.example.bike\")"),
            (Self.delivery(.update), Self.iPhone(credentials: []), "hold noCredentials(\"com.example.bike\", IsletCore.APNsEnvironment.production)"),
            (Self.delivery(.update), Self.iPhone(credentials: [Self.credential(.development)]), "hold noCredentials(\"com.example.bike\", IsletCore.APNsEnvironment.production)"),
            (Self.delivery(.update), Self.iPhone(credentials: [Self.credential(failure: "403 InvalidProviderToken")]), "hold credentialRefused(\"com.example.bike\", \"403 InvalidProviderToken\")"),
        ]
        for (delivery, destination, expected) in rows {
            #expect(Self.shown(Self.route(delivery, to: destination)) == expected)
        }
        #expect(DeliveryHold.paused("com.example.bike").note == "delivery is paused for com.example.bike: resume it with PATCH /v1/apps/com.example.bike {\"deliveryPaused\": false}")
        #expect(DeliveryFailure.expired.note == "expired before it could be delivered: a Live Activity lives eight hours at most")
    }

    /// An environment with several keys signs with the newest Apple has not refused: a rotation's
    /// new key from the moment it is added, the one before it once Apple refuses the new one.
    @Test func theNewestKeyAppleHasNotRefusedSigns() {
        func key(_ id: String, at seconds: Double, failure: String? = nil) -> StoredCredential {
            StoredCredential(
                credential: DeliveryCredential(
                    bundleId: Self.app, environment: .production, teamId: "TEAM", keyId: id, createdAt: Self.now.addingTimeInterval(seconds),
                    failure: failure
                ),
                privateKey: "(\(id))"
            )
        }
        func signer(_ keys: [StoredCredential]) -> String {
            guard case .send(.apns(let request), _, _, _) = Self.route(Self.delivery(.update), to: Self.iPhone(credentials: keys)) else { return "none" }
            return request.credential.credential.keyId
        }
        #expect(signer([key("OLD", at: 0), key("NEW", at: 60)]) == "NEW")
        #expect(signer([key("NEW", at: 60), key("OLD", at: 0)]) == "NEW")
        #expect(signer([key("OLD", at: 0), key("NEW", at: 60, failure: "403 InvalidProviderToken")]) == "OLD")
        // A development key never signs for production.
        #expect(signer([key("OLD", at: 0), StoredCredential(
            credential: DeliveryCredential(bundleId: Self.app, environment: .development, teamId: "TEAM", keyId: "DEV", createdAt: Self.now.addingTimeInterval(99)),
            privateKey: "(dev)"
        )]) == "OLD")
        let allRefused = [key("OLD", at: 0, failure: "403 A"), key("NEW", at: 60, failure: "403 B")]
        #expect(Self.shown(Self.route(Self.delivery(.update), to: Self.iPhone(credentials: allRefused))) == "hold credentialRefused(\"com.example.bike\", \"403 B\")")
    }

    /// A renewed activity's end goes in its successor's order, and waits until the phone shows
    /// the successor: the phone never shows neither card.
    @Test func aRenewedEndWaitsForItsSuccessor() {
        let end = Self.delivery(.end, order: .activity("A2"))
        #expect(Self.shown(Self.route(end, to: Self.iPhone(successor: ("A2", false)))) == "hold successorNotShown(\"A2\")")
        #expect(Self.shown(Self.route(end, to: Self.iPhone(successor: ("A2", true)))).hasPrefix("send apns 10"))
        #expect(Delivery.Order(key: Delivery.Order.activity("A2").key) == .activity("A2"))
        #expect(Delivery.Order(key: "channel:ab:c=") == .channel("ab:c="))
        #expect(Delivery.Order(key: "phone:1") == nil && Delivery.Order(key: "activity") == nil)
    }

    @Test func anAndroidPhoneGoesThroughFCM() {
        let fcm = StoredFCMCredential(
            credential: FCMCredential(
                bundleId: Self.app, projectId: "p", clientEmail: "a@p.iam.gserviceaccount.com", privateKeyId: "k",
                tokenUri: "https://oauth2.googleapis.com/token", createdAt: Self.now
            ),
            serviceAccount: "{}"
        )
        func android(token: PhoneToken? = Self.token(.fcm), state: PhoneActivity.State = .active, paused: Bool = false, credential: StoredFCMCredential? = fcm) -> DeliveryContext.Destination {
            .android(DeliveryContext.Android(
                phone: PhoneActivity(activityId: "A1", bundleId: Self.app, deviceId: "pixel", environment: .production, platform: .android, state: state),
                token: token, app: DeliveryContext.App(bundleId: Self.app, paused: paused, credentials: [], fcmCredential: credential)
            ))
        }
        var refused = fcm
        refused.credential.failure = "invalid_grant"
        let rows: [(DeliveryContext.Destination, String)] = [
            (android(), "send fcm token ttl=3600 fcm production registrationToken(\"bb22\")"),
            // An installation ID goes as `message.fid`, and the log names it.
            (android(token: Self.token(.fid)), "send fcm fid ttl=3600 fcm production installationId(\"bb22\")"),
            (android(state: .tokenRetired), "fail tokenRetired(IsletCore.DevicePlatform.android)"),
            (android(token: nil), "hold noRegistrationToken(\"com.example.bike\", \"pixel\")"),
            (android(paused: true), "hold paused(\"com.example.bike\")"),
            (android(credential: nil), "hold noFCMCredential(\"com.example.bike\")"),
            (android(credential: refused), "hold fcmCredentialRefused(\"com.example.bike\", \"invalid_grant\")"),
        ]
        for (destination, expected) in rows {
            #expect(Self.shown(Self.route(Self.delivery(.update), to: destination)) == expected)
        }
    }

    @Test func aBroadcastGoesToItsChannelAtTen() {
        var broadcast = Self.delivery(.update, order: .channel("ch1"), expiration: Self.now.addingTimeInterval(60))
        broadcast.activityId = nil
        broadcast.channelId = "ch1"
        func channel(storagePolicy: Int, environment: APNsEnvironment? = .production) -> DeliveryContext.Destination {
            .broadcast(DeliveryContext.Broadcast(
                channel: BroadcastChannel(id: "ch1", bundleId: Self.app, storagePolicy: storagePolicy, createdAt: Self.now, environment: environment),
                app: DeliveryContext.App(bundleId: Self.app, paused: false, credentials: [Self.credential()])
            ))
        }
        #expect(Self.shown(Self.route(broadcast, to: channel(storagePolicy: 1))) == "send apns 10 exp=1800000060 broadcast production channel(\"ch1\")")
        // A channel that stores nothing takes only apns-expiration 0.
        #expect(Self.shown(Self.route(broadcast, to: channel(storagePolicy: 0))) == "send apns 10 exp=0 broadcast production channel(\"ch1\")")
        #expect(Self.shown(Self.route(broadcast, to: .broadcast(nil))) == "fail channelDeleted(\"ch1\")")
        #expect(Self.shown(Self.route(broadcast, to: channel(storagePolicy: 1, environment: nil))) == "fail channelDeleted(\"ch1\")")
    }
}
