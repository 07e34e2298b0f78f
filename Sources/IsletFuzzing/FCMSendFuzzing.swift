import Foundation
import IsletCore
import IsletFCM

extension FuzzTarget {
    /// A `POST /v1/projects/{project}/messages:send` body, read as Islet — playing Google — reads
    /// it (`FCMSendRequest`): refused with a 400 and a message whose error body the sender's
    /// reader (`FCMRefusal`) reads back as the same status, code and message; or accepted with
    /// exactly one target, a registration token of plain ASCII, a data payload of at most 4,096
    /// bytes without FCM's reserved keys, and a `ttl` from 0 to 28 days.
    public static let fcmSend = FuzzTarget(name: "fcm-send") { data throws(FuzzFailure) in
        let message: FCMMessage
        do throws(FCMError) {
            message = try FCMSendRequest(body: data).message
        } catch {
            try expect(error.status == 400 && !error.message.isEmpty, "refused with \(error)")
            let read = FCMRefusal(status: error.status, body: error.body, retryAfter: nil)
            try expect(
                read.status == error.status && read.errorCode == error.errorCode && read.message == error.message
                    && read.googleStatus == error.googleStatus,
                "the error body reads back as \(read), not \(error)"
            )
            return
        }
        if case .token(let token) = message.target {
            try expect(!token.isEmpty && token.allSatisfy { $0.isASCII && !$0.isWhitespace }, "accepted the token \(token.debugDescription)")
        }
        let size = message.data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        try expect(size <= FCMMessage.maximumPayload, "accepted a payload of \(size) bytes")
        for key in message.data.keys {
            let lower = key.lowercased()
            try expect(
                !key.isEmpty && !["from", "notification", "message_type"].contains(lower) && !lower.hasPrefix("google") && !lower.hasPrefix("gcm"),
                "accepted the reserved data key \(key.debugDescription)"
            )
        }
        if let ttl = message.android.ttl {
            try expect(ttl.isFinite && (0...FCMMessage.maximumTTL).contains(ttl), "accepted the ttl \(ttl)")
        }
    }
}
