import Foundation
import IsletAPNs
import IsletClient
import IsletCore
@testable import IsletServer
import IsletTestSupport
import Testing

/// Apple's failures, played by the endpoint so providers can be tested against them
/// (docs/apns.md, "Apple's failures").
@Suite("APNs failures played on purpose", .hangDetector)
struct APNsFailureTests {
    @Test func faultsAreReadAsSharesOfPushes() throws {
        let faults = try APNsFaults(parsing: " 500=0.1, 503=0.05,429=0.05 , close=0.02")
        #expect(faults.shares == [.internalServerError: 0.1, .serviceUnavailable: 0.05, .tooManyRequests: 0.05, .close: 0.02])
        #expect(abs(faults.total - 0.22) < 1e-12)
        // The draw falls on each kind in turn, then on none.
        #expect(faults.fault(at: 0) == .internalServerError)
        #expect(faults.fault(at: 0.0999) == .internalServerError)
        #expect(faults.fault(at: 0.1) == .serviceUnavailable)
        #expect(faults.fault(at: 0.16) == .tooManyRequests)
        #expect(faults.fault(at: 0.21) == .close)
        #expect(faults.fault(at: 0.22) == nil)
        #expect(faults.fault(at: 0.99) == nil)
        #expect(try APNsFaults(parsing: "").total == 0)
        #expect(try APNsFaults(parsing: "CLOSE=1").fault(at: 0.999) == .close)
        for bad in ["500", "418=0.1", "500=lots", "500=-0.1", "500=nan", "500=0.6, 503=0.6", "500=0.1, 500=0.2", "=0.1"] {
            #expect(throws: APNsFaults.ParseFailure.self, "\(bad)") { try APNsFaults(parsing: bad) }
        }
    }

    @Test func aTokenPushedTooOftenIsToldTooManyRequests() async throws {
        try await withIslet({ $0.apns.tokenRateLimit = 3 }) { islet in
            try await islet.withProvider { provider in
                let activity = try await provider.startWithToken()
                let token = try #require(activity.pushToken)
                // One provider token throughout, as Apple asks (a new one would be refused sooner).
                let jwt = try await provider.jwt()
                func push(_ token: String, _ step: Int) async throws -> APNsClient.Response {
                    try await provider.push(token, Provider.update(#"{"step":\#(step)}"#), jwt: jwt)
                }
                for step in 1...3 {
                    #expect(try await push(token, step).status == 200)
                }
                let refused = try await push(token, 4)
                #expect(refused.status == 429)
                #expect(refused.reason == "TooManyRequests")
                #expect(try await islet.isletClient(key: provider.apiKey).activity(activity.id).content.state == ["step": 3])
                // Another token has its own allowance; this one gets one push back every 20 s.
                let other = try #require(try await provider.startWithToken().pushToken)
                #expect(try await push(other, 1).status == 200)
                islet.clock.advance(by: 19)
                #expect(try await push(token, 4).reason == "TooManyRequests")
                islet.clock.advance(by: 1)
                #expect(try await push(token, 4).status == 200)
                #expect(try await push(token, 5).reason == "TooManyRequests")
            }
        }
    }

    @Test func aConnectionsProviderTokenMayChangeOnceEveryTwentyMinutes() async throws {
        try await withIslet { islet in
            try await islet.withProvider { provider in
                let token = try #require(try await provider.startWithToken().pushToken)
                let first = try await provider.jwt()
                #expect(try await provider.push(token, Provider.update(#"{"step":1}"#), jwt: first).status == 200)
                islet.clock.advance(by: 600)
                let tooSoon = try await provider.push(token, Provider.update(#"{"step":2}"#), jwt: try await provider.jwt())
                #expect(tooSoon.status == 429)
                #expect(tooSoon.reason == "TooManyProviderTokenUpdates")
                // The same token again is fine.
                #expect(try await provider.push(token, Provider.update(#"{"step":2}"#), jwt: first).status == 200)
                // A new connection starts with whatever token it brings.
                let jwt = try await provider.jwt()
                let onFresh = try await islet.apnsHTTPClient().shuttingDown { fresh in
                    try await APNsClient(server: "https://localhost:\(islet.apnsPort!)", http: fresh).push(
                        token: token, topic: provider.bundleId, payload: Data(Provider.update(#"{"step":3}"#).utf8), providerToken: jwt
                    )
                }
                #expect(onFresh.status == 200)
                // Twenty minutes after the first, the first connection may change its token.
                islet.clock.advance(by: 600)
                #expect(try await provider.push(token, Provider.update(#"{"step":4}"#), jwt: try await provider.jwt()).status == 200)
            }
        }
    }

    @Test func aFaultedPushIsNotApplied() async throws {
        for (fault, status, reason) in [("500=1", 500, "InternalServerError"), ("503=1", 503, "ServiceUnavailable"), ("429=1", 429, "TooManyRequests")] {
            try await withIslet({ $0.apns.faults = try! APNsFaults(parsing: fault) }) { islet in
                try await islet.withProvider { provider in
                    let activity = try await provider.startWithToken()
                    let answer = try await provider.push(activity.pushToken!, Provider.update(#"{"step":2}"#))
                    #expect(answer.status == status)
                    #expect(answer.reason == reason)
                    #expect(try await islet.isletClient(key: provider.apiKey).activity(activity.id).content.state == ["step": 1])
                }
            }
        }
    }

    @Test func aClosingFaultEndsTheConnectionUnderThePush() async throws {
        try await withIslet({ $0.apns.faults = try! APNsFaults(parsing: "close=1") }) { islet in
            try await islet.withProvider { provider in
                let activity = try await provider.startWithToken()
                // The provider sees the connection go (or, if the answer raced ahead, a 503).
                do {
                    let answer = try await provider.push(activity.pushToken!, Provider.update(#"{"step":2}"#))
                    #expect(answer.status == 503)
                } catch {}
                #expect(try await islet.isletClient(key: provider.apiKey).activity(activity.id).content.state == ["step": 1])
            }
        }
    }
}
