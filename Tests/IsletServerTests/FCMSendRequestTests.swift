import Foundation
import IsletCore
import IsletFCM
import IsletEngine
import IsletTestSupport
import Testing

let firebaseAdminAvailable = pythonHas("firebase_admin", requiredBy: "ISLET_REQUIRE_PYTHON_PROVIDER")

/// `messages:send` bodies, read and checked as FCM checks them (`FCMSendRequest`), and FCM's
/// error bodies as Islet writes them — which the sender's reader (`FCMRefusal`) reads back.
@Suite("FCM messages:send requests", .hangDetector)
struct FCMSendRequestTests {
    let token = "fHk3Qd9bT0aXyZ:APA91bG" + String(repeating: "k", count: 140)

    func request(_ json: String) throws(FCMError) -> FCMSendRequest {
        try FCMSendRequest(body: Data(json.utf8))
    }

    func refusal(_ json: String) -> FCMError? {
        do {
            _ = try request(json)
            return nil
        } catch {
            return error
        }
    }

    @Test func aLiveUpdateAsIsletSendsItIsRead() throws {
        let sent = try request(
            #"{"message": {"token": "\#(token)", "data": {"islet": "{\"event\":\"update\"}"}, "android": {"priority": "HIGH", "ttl": "3600s", "collapse_key": "A1"}}}"#
        )
        #expect(sent.validateOnly == false)
        #expect(sent.message.target == .token(token))
        #expect(sent.message.data == ["islet": #"{"event":"update"}"#])
        #expect(sent.message.android.priority == .high)
        #expect(sent.message.android.ttl == 3600)
        #expect(sent.message.android.collapseKey == "A1")
        #expect(!sent.message.hasNotification)
        // The same message to an installation ID, as Islet's sender writes it.
        let fid = "cFqg2ZkRS9Sx8VZk1dA1Qm"
        let toFid = try FCMSendRequest(body: Data(try WireFormat.string(AndroidPayloads.message(to: .fid(fid), islet: "{}", activityId: "A1", ttl: 60)).utf8))
        #expect(toFid.message.target == .fid(fid))
        let checked = try request(#"{"validate_only": true, "message": {"topic": "/topics/rides", "android": {"data": {"k": "v"}, "ttl": "0.5s"}}}"#)
        #expect(checked.validateOnly)
        #expect(checked.message.data == ["k": "v"])
        #expect(checked.message.android.ttl == 0.5)
    }

    @Test func whatFCMRefusesIsRefusedWithItsStatusCodeAndField() {
        let cases: [(String, Int, FCMErrorCode?, String?, String)] = [
            (#"[1]"#, 400, nil, nil, "must be a JSON object"),
            (#"{"mesage": {}}"#, 400, nil, nil, #"Unknown name "mesage": Cannot find field."#),
            (#"{"message": {"token": "t", "tokens": []}}"#, 400, nil, "message", #"Unknown name "tokens" at 'message'"#),
            (#"{"message": {}}"#, 400, .invalidArgument, "message", "exactly one of message.token"),
            (#"{"message": {"token": "t", "topic": "x"}}"#, 400, .invalidArgument, "message", "(2 were)"),
            (#"{"message": {"token": "t", "fid": "cFqg2ZkRS9Sx8VZk1dA1Qm"}}"#, 400, .invalidArgument, "message", "(2 were)"),
            // An installation ID is 22 characters of URL-safe base64 starting with c to f.
            (#"{"message": {"fid": "fHk3:APA91bTheTokenIsNotAnId"}}"#, 400, .invalidArgument, "message.fid", "not a valid Firebase installation ID"),
            (#"{"message": {"fid": "aFqg2ZkRS9Sx8VZk1dA1Qm"}}"#, 400, .invalidArgument, "message.fid", "not a valid Firebase installation ID"),
            (#"{"message": {"fid": "cFqg2ZkRS9Sx8VZk1dA1Q"}}"#, 400, .invalidArgument, "message.fid", "not a valid Firebase installation ID"),
            (#"{"message": {"fid": 7}}"#, 400, nil, "message.fid", "(TYPE_STRING), number"),
            (#"{"message": {"token": "a b"}}"#, 400, .invalidArgument, "message.token", "not a valid FCM registration token"),
            (#"{"message": {"token": ""}}"#, 400, .invalidArgument, "message.token", "not a valid FCM registration token"),
            (#"{"message": {"token": 7}}"#, 400, nil, "message.token", "(TYPE_STRING), number"),
            (#"{"message": {"topic": "no/slashes"}}"#, 400, .invalidArgument, "message.topic", "topic name"),
            (#"{"message": {"token": "t", "data": {"n": 1}}}"#, 400, nil, "message.data.n", "'message.data[n].value' (TYPE_STRING)"),
            (#"{"message": {"token": "t", "data": {"from": "x"}}}"#, 400, .invalidArgument, "message.data", "Invalid data payload key: from"),
            (#"{"message": {"token": "t", "data": {"google.sent_time": "x"}}}"#, 400, .invalidArgument, "message.data", "google.sent_time"),
            (#"{"message": {"token": "t", "android": {"data": {"gcm.n": "x"}}}}"#, 400, .invalidArgument, "message.android.data", "gcm.n"),
            (#"{"message": {"token": "t", "android": {"priority": "URGENT"}}}"#, 400, nil, "message.android.priority", "AndroidMessagePriority"),
            (#"{"message": {"token": "t", "android": {"ttl": "3600"}}}"#, 400, nil, "message.android.ttl", "Duration"),
            (#"{"message": {"token": "t", "android": {"ttl": "-1s"}}}"#, 400, nil, "message.android.ttl", "Duration"),
            (#"{"message": {"token": "t", "android": {"ttl": "1.0000000001s"}}}"#, 400, nil, "message.android.ttl", "Duration"),
            (#"{"message": {"token": "t", "android": {"ttl": "2419201s"}}}"#, 400, .invalidArgument, "message.android.ttl", "at most 2419200s"),
            (#"{"message": {"token": "t", "android": {"sound": "x"}}}"#, 400, nil, "message.android", #"Unknown name "sound""#),
            (#"{"message": {"token": "t", "android": []}}"#, 400, nil, "message.android", "AndroidConfig"),
            (#"{"validate_only": "yes", "message": {"token": "t"}}"#, 400, nil, "validate_only", "TYPE_BOOL"),
            (#"{"message": {"token": "t", "data": {"k": "\#(String(repeating: "x", count: 4096))"}}}"#, 400, .invalidArgument, "message", "too big (4097 bytes"),
        ]
        for (body, status, code, field, text) in cases {
            guard let error = refusal(body) else {
                Issue.record("accepted: \(body.prefix(120))")
                continue
            }
            #expect(error.status == status, "\(body.prefix(80))")
            #expect(error.errorCode == code, "\(body.prefix(80)): \(error)")
            #expect(error.field == field, "\(body.prefix(80)): \(error)")
            #expect(error.message.contains(text), "\(body.prefix(80)): \(error.message)")
        }
        // 4,096 bytes of keys and values is the most there is room for.
        #expect(refusal(#"{"message": {"token": "t", "data": {"k": "\#(String(repeating: "x", count: 4096))"}}}"#) != nil)
        #expect(refusal(#"{"message": {"token": "t", "data": {"k": "\#(String(repeating: "x", count: 4095))"}}}"#) == nil)
        #expect(refusal(String(repeating: " ", count: FCMSendRequest.maximumBody + 1))?.message.contains("too big") == true)
    }

    /// The body Islet writes as Google is the body its sender reads as FCM's: status, error
    /// code, Google's status and message.
    @Test(arguments: FCMErrorCode.allCases)
    func anErrorBodyReadsBackAsTheSenderReadsFCMs(_ code: FCMErrorCode) {
        let error = FCMError(code, "Requested entity was not found.", field: "message.token")
        let read = FCMRefusal(status: error.status, body: error.body, retryAfter: nil)
        #expect(read == FCMRefusal(code, message: "Requested entity was not found."))
    }

    /// firebase-admin's own encoding of a message with data and Android options — as its
    /// `send` posts it — is read as it means.
    @Test(.enabled(if: firebaseAdminAvailable, "needs Python's firebase-admin: pip install firebase-admin (.ci/run installs it)"))
    func firebaseAdminsEncodingOfAMessageIsRead() async throws {
        let script = """
            import datetime, json
            from firebase_admin import messaging
            message = messaging.Message(
                token="\(token)",
                data={"islet": json.dumps({"event": "update", "activityId": "A1"})},
                android=messaging.AndroidConfig(priority="high", ttl=datetime.timedelta(seconds=90.25), collapse_key="A1",
                                                restricted_package_name="com.example.rides"))
            print(json.dumps({"message": messaging._MessagingService.encode_message(message)}))
            """
        let run = try await runProgram(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script], timeout: 60)
        try #require(run.status == 0, "\(run.stderr)")
        let sent = try FCMSendRequest(body: Data(run.stdout.utf8))
        #expect(sent.message.target == .token(token))
        #expect(sent.message.data["islet"] == #"{"event": "update", "activityId": "A1"}"#)
        #expect(sent.message.android.priority == .high)
        #expect(sent.message.android.ttl == 90.25)
        #expect(sent.message.android.collapseKey == "A1")
        #expect(sent.message.android.restrictedPackageName == "com.example.rides")
    }
}
