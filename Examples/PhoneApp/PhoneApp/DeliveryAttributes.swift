#if canImport(ActivityKit)
import ActivityKit
#else
import IsletKit
#endif
import Foundation
import IsletLiveActivities

/// The delivery app's Live Activity: an order on its way.
///
/// `islet` is the one member an app adds for Islet: the id of Islet's activity, which Islet
/// puts into the attributes of every push-to-start, so the app library can tell Islet which
/// activity a new update token belongs to (`IsletIdentifiable`, docs/installations.md). It is
/// optional: an activity the app starts itself decodes too.
public struct DeliveryAttributes: ActivityAttributes, IsletIdentifiable {
    public struct ContentState: Codable, Hashable, Sendable {
        public var status: String
        public var eta: Date?

        public init(status: String, eta: Date? = nil) {
            self.status = status
            self.eta = eta
        }
    }

    public var orderNumber: String
    public var islet: String?

    public init(orderNumber: String, islet: String? = nil) {
        self.orderNumber = orderNumber
        self.islet = islet
    }
}
