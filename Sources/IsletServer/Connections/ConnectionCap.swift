import NIOCore
import Synchronization

/// Counts one port's open connections and decides, as each one arrives, whether it is served,
/// refused with an answer, or — when even the refusals are many — closed at once. The count of
/// descriptors a port holds is so bounded by `limit + refusalSlots`. It holds the connections
/// it counts, so that a shutdown that has waited long enough can close those still open.
final class ConnectionCap: Sendable {
    /// What happens to a new connection.
    enum Admission: Equatable {
        /// Served as usual.
        case serve
        /// Over the cap: answered with a refusal, then closed.
        case refuse
        /// Over the cap with every refusal slot taken: closed at once.
        case drop
    }

    /// The most connections served at once.
    let limit: Int
    /// The most over-cap connections being refused at once.
    let refusalSlots: Int
    private let open = Mutex((served: 0, refusing: 0, channels: [ObjectIdentifier: any Channel]()))

    init(limit: Int, refusalSlots: Int) {
        self.limit = limit
        self.refusalSlots = refusalSlots
    }

    /// Admits `channel`, counting it until it closes when it is served or refused.
    func admit(_ channel: any Channel) -> Admission {
        let admission = open.withLock { open -> Admission in
            if open.served < limit {
                open.served += 1
                return .serve
            }
            if open.refusing < refusalSlots {
                open.refusing += 1
                return .refuse
            }
            return .drop
        }
        switch admission {
        case .serve, .refuse:
            let id = ObjectIdentifier(channel)
            open.withLock { $0.channels[id] = channel }
            channel.closeFuture.whenComplete { _ in
                self.open.withLock { open in
                    open.channels[id] = nil
                    if admission == .serve { open.served -= 1 } else { open.refusing -= 1 }
                }
            }
        case .drop:
            channel.close(promise: nil)
        }
        return admission
    }

    /// Closes every connection still open, and says how many there were.
    func closeAll() -> Int {
        let channels = open.withLock { Array($0.channels.values) }
        for channel in channels { channel.close(promise: nil) }
        return channels.count
    }
}
