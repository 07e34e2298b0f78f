import Foundation
import IsletCore
import Testing

/// Where FCM reaches an app on an Android phone: a registration token or a Firebase
/// installation ID, told apart by the field that carries it and checked where it enters.
struct FCMAddressTests {
    @Test func anInstallationIdIsTwentyTwoCharactersOfURLSafeBase64StartingWithCToF() {
        for fid in ["cFqg2ZkRS9Sx8VZk1dA1Qm", "dAAAAAAAAAAAAAAAAAAAA_", "f-_0123456789abcdefABC", "eZZZZZZZZZZZZZZZZZZZZZ"] {
            #expect(FCMAddress.isInstallationId(fid), "\(fid)")
            #expect(throws: Never.self) { try FCMAddress.fid(fid).validate() }
        }
        for not in ["", "aFqg2ZkRS9Sx8VZk1dA1Qm", "gFqg2ZkRS9Sx8VZk1dA1Qm", "cFqg2ZkRS9Sx8VZk1dA1Q", "cFqg2ZkRS9Sx8VZk1dA1Qmm", "cFqg2ZkRS9Sx8VZk1dA1Q=",
                    "cFqg2ZkRS9Sx8VZk1dA1Q/", "cFqg2ZkRS9Sx8VZk1dA1Q é", "fHk3:APA91bTheTokenIsNotAnId"] {
            #expect(!FCMAddress.isInstallationId(not), "\(not)")
            #expect(throws: IsletError.self) { try FCMAddress.fid(not).validate() }
        }
    }

    @Test func aBodyGivesATokenOrAnInstallationIdAndNeverBoth() throws {
        #expect(try FCMTokenBody(token: "t:APA91b", fid: nil).address() == .token("t:APA91b"))
        #expect(try FCMTokenBody(token: nil, fid: "cFqg2ZkRS9Sx8VZk1dA1Qm").address() == .fid("cFqg2ZkRS9Sx8VZk1dA1Qm"))
        for body in [FCMTokenBody(token: nil, fid: nil), FCMTokenBody(token: "t", fid: "cFqg2ZkRS9Sx8VZk1dA1Qm")] {
            #expect {
                try body.address()
            } throws: { error in
                (error as? IsletError)?.reason == .invalidRequest
            }
        }
        // What the client writes is what the server reads.
        let written = try JSONDecoder().decode(FCMTokenBody.self, from: JSONEncoder().encode(FCMTokenBody(.fid("cFqg2ZkRS9Sx8VZk1dA1Qm"))))
        #expect(written.fid == "cFqg2ZkRS9Sx8VZk1dA1Qm" && written.token == nil)
    }

    @Test func aStoredPhoneTokenIsAnAddressOnlyWhenItIsFCMs() {
        func token(_ kind: PhoneToken.Kind) -> PhoneToken {
            PhoneToken(token: "x", kind: kind, bundleId: "a", deviceId: "d", environment: .production, createdAt: Date())
        }
        #expect(FCMAddress(token(.fcm)) == .token("x"))
        #expect(FCMAddress(token(.fid)) == .fid("x"))
        #expect(FCMAddress(token(.update)) == nil && FCMAddress(token(.pushToStart)) == nil)
        #expect(PhoneToken.fields.contains("fcmInstallationId"))
    }
}

extension FCMTokenBody {
    init(token: String?, fid: String?) {
        self.init(.token(""))
        self.token = token
        self.fid = fid
    }
}
