import Foundation

/// The body of Apple's channel management (`POST /1/apps/{bundleId}/channels`, and the answer to
/// `GET`): `{"message-storage-policy": 0 or 1, "push-type": "LiveActivity"}`. The sender and the
/// APNs client write it; the APNs-compatible endpoint reads it, and refuses anything else with
/// `BadRequestParams`, as Apple does.
public struct ChannelConfiguration: Codable, Sendable, Equatable {
    /// 0: no message stored; 1: the latest message kept for 8 hours.
    public var messageStoragePolicy: Int
    /// `LiveActivity`, the only push type a channel carries (Apple reads it in any case).
    public var pushType: String

    enum CodingKeys: String, CodingKey {
        case messageStoragePolicy = "message-storage-policy", pushType = "push-type"
    }

    /// What a channel with `messageStoragePolicy` is created with.
    public init(messageStoragePolicy: Int) {
        self.messageStoragePolicy = messageStoragePolicy
        pushType = "LiveActivity"
    }

    /// Reads a request body; `nil` for anything but a policy of 0 or 1 and the Live Activity push type.
    public init?(body: Data) {
        guard let read = try? JSONDecoder().decode(Self.self, from: body), [0, 1].contains(read.messageStoragePolicy),
            read.pushType.lowercased() == "liveactivity"
        else { return nil }
        self = read
    }

    /// What the endpoint says of a body `init(body:)` refused.
    public static let expected = #"The body must be {"message-storage-policy": 0 or 1, "push-type": "LiveActivity"}."#

    /// The body as sent: compact JSON, keys in Apple's order.
    public var body: String {
        #"{"message-storage-policy":\#(messageStoragePolicy),"push-type":"\#(pushType)"}"#
    }
}
