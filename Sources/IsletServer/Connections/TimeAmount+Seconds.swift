import Foundation
import NIOCore

extension TimeAmount {
    /// A timeout from the configuration, in whole or fractional seconds; the configuration
    /// keeps timeouts to at most a week, well inside `TimeAmount`'s range.
    init(seconds: TimeInterval) {
        self = .nanoseconds(Int64(seconds * 1_000_000_000))
    }
}
