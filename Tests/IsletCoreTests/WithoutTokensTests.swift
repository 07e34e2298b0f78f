import Foundation
import IsletCore
import Testing

/// `String.withoutTokens`: the one rule for what a reader without a key sees of a token or a
/// channel id in what Islet writes.
@Suite("Text without tokens")
struct WithoutTokensTests {
    static let token = "5a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"

    @Test func aTokenAsLogsShowItKeepsItsFirstEightDigits() {
        let note = "push-to-start to \(PhoneToken.shorten(Self.token)) (development)"
        #expect(note == "push-to-start to 5a1b2c3d…c6d7e8f9 (development)")
        #expect(note.withoutTokens == "push-to-start to 5a1b2c3d… (development)")
    }

    @Test func aWholeTokenKeepsItsFirstEightDigitsWhateverSurroundsIt() {
        #expect("/3/device/\(Self.token)".withoutTokens == "/3/device/5a1b2c3d…")
        #expect("\"\(Self.token.uppercased())0zz\" is not one.".withoutTokens == "\"5A1B2C3D…zz\" is not one.")
    }

    @Test func aChannelIdKeepsItsFirstEightCharacters() {
        #expect("channel dHN0LXNyY2gtY2hubA==".withoutTokens == "channel dHN0LXNy…")
        #expect("not sent: this activity joined channel Ab3dEf7hIj1lMn5pQr9tUw==, whose changes go by broadcast (POST /v1/apps/a/channels/Ab3dEf7hIj1lMn5pQr9tUw==/broadcast)".withoutTokens
            == "not sent: this activity joined channel Ab3dEf7h…, whose changes go by broadcast (POST /v1/apps/a/channels/Ab3dEf7h…/broadcast)")
    }

    /// An FCM registration token: a Firebase installation ID, ":", and Google's part.
    static let fcmToken = "dXk3Qa8rT2mV5nB1cZ9pLw:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx9Ah_mG7SkJ0u3Ldn-vGS8Uyh3v0wCSa2bE1cPhXw8XTh2Vq2uLxJyKjhPpG6T6KrN4Y-UqT8dH5CM1zYkDXO5AbGdL4P7z"

    @Test func anFCMTokenAsLogsShowItKeepsItsFirstEightCharacters() {
        let note = "to Android phone \(PhoneToken.shorten(Self.fcmToken)) through FCM"
        #expect(note == "to Android phone dXk3Qa8r…bGdL4P7z through FCM")
        #expect(note.withoutTokens == "to Android phone dXk3Qa8r… through FCM")
    }

    @Test func aWholeFCMTokenOrInstallationIdKeepsItsFirstEightCharacters() {
        #expect("token \(Self.fcmToken) refused".withoutTokens == "token dXk3Qa8r… refused")
        #expect("installation cK9dQm2xT5vB8nW3pLr7Zy".withoutTokens == "installation cK9dQm2x…")
        #expect("{\"fcmToken\":\"\(Self.fcmToken)\"}".withoutTokens == "{\"fcmToken\":\"dXk3Qa8r…\"}")
    }

    @Test func whatIsNoTokenIsLeftAlone() {
        for text in [
            "Apple 500 after 12.5 ms; next try at 1700000000123", "activity 9C3F0A20-4E5B-4D1A-88B1-27E5A4B6C421",
            "the channel was deleted", "decade…ace", "applied…and", "deadbeef…cafe",
        ] {
            #expect(text.withoutTokens == text)
        }
    }

    /// A receiver's answer as the attempt log keeps it (`WebhookAttempt.kept`): its first 256
    /// bytes, without tokens, and a token the cut splits cut too.
    @Test func aReceiversAnswerIsKeptWithoutTheTokensItQuotes() {
        let echo = #"{"error":"unprocessable","received":{"data":{"activity":{"pushToken":"\#(Self.token)"}}}}"#
        #expect(WebhookAttempt.kept(echo) == #"{"error":"unprocessable","received":{"data":{"activity":{"pushToken":"5a1b2c3d…"}}}}"#)
        // The cut falls inside the token: what is left of it is 10 digits, still cut to 8.
        let split = String(repeating: " ", count: 245) + Self.token
        #expect(WebhookAttempt.kept(split) == String(repeating: " ", count: 245) + "5a1b2c3d…")
        #expect(WebhookAttempt.kept(String(repeating: " ", count: 230) + Self.fcmToken).hasSuffix(" dXk3Qa8r…"))
        // A row an earlier version cut at 256 bytes, ending in 15 digits of a token.
        let legacy = String(repeating: " ", count: 241) + Self.token.prefix(15)
        #expect(WebhookAttempt.kept(legacy) == String(repeating: " ", count: 241) + "5a1b2c3d…")
        // The cut one takes no more room than the 256 bytes (the fuzz target found 257).
        let tight = WebhookAttempt.kept(String(repeating: " ", count: 246) + "abcdef1234" + " and more")
        #expect(tight.utf8.count <= 256 && tight.hasSuffix(" abcdef1…"), "\(tight.suffix(12))")
        // What may not be a token is kept as it is, cut at 256 bytes on a character's end.
        #expect(WebhookAttempt.kept(String(repeating: "x", count: 1_000)) == String(repeating: "x", count: 256))
        #expect(WebhookAttempt.kept(String(repeating: "é", count: 200)).utf8.count == 256)
        #expect(WebhookAttempt.kept("ok") == "ok")
        let attempt = WebhookAttempt(
            endpointId: "wh_1", event: "evt_1", type: .activityStarted, attempt: 1, at: Date(), status: 422, error: "refused \(Self.token)",
            latencyMs: 1, response: echo
        )
        #expect(attempt.error == "refused 5a1b2c3d…" && attempt.response?.contains(Self.token.prefix(9)) == false)
    }
}
