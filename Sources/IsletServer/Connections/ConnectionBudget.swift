#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How many connections each port serves when the configuration does not say: shares of the
/// process's open-file limit, after what everything else needs, so that a full port never
/// leaves the process without a descriptor — SQLite keeps committing, and a refusal can still
/// be accepted and answered.
struct ConnectionBudget: Equatable {
    /// Descriptors kept for everything but connections: SQLite's files, the listeners, the event
    /// loops, standard streams, certificate and key files read at start-up.
    static let reserved = 128
    /// Connections over the REST port's cap answered `503` at once; beyond them, a new
    /// connection is closed as it arrives.
    static let refusalSlots = 32

    /// The REST API's share: three quarters, less the refusals.
    var http: Int
    /// The APNs endpoint's share: a quarter (providers keep a few long-lived connections).
    var apns: Int

    init(descriptorLimit: Int) {
        let usable = max(descriptorLimit - Self.reserved, descriptorLimit / 2)
        http = max(usable * 3 / 4 - Self.refusalSlots, 1)
        apns = max(usable / 4, 1)
    }

    /// The budget for this process's soft open-file limit (`ulimit -n`).
    static func current() -> ConnectionBudget {
        ConnectionBudget(descriptorLimit: descriptorLimit())
    }

    /// The soft open-file limit, or a million when there is none (`RLIM_INFINITY`, all ones).
    static func descriptorLimit() -> Int {
        var limit = rlimit()
        #if canImport(Glibc)
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        #else
        let resource = RLIMIT_NOFILE
        #endif
        guard getrlimit(resource, &limit) == 0, limit.rlim_cur != rlim_t.max else { return 1_000_000 }
        return Int(clamping: limit.rlim_cur)
    }
}
