import Foundation

/// The open-file limit. Fan-out holds ten thousand sockets in the harness and as many in the
/// server, more than the usual soft limit of 1,024; the servers the harness starts inherit its
/// limit, so raising it here once raises it for them too.
enum FileLimit {
    /// The soft limit, raised to the hard limit the first time it is read.
    static let current: Int = {
        var limit = rlimit()
        #if os(Linux)
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        #else
        let resource = RLIMIT_NOFILE
        #endif
        guard getrlimit(resource, &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(resource, &raised) == 0 { limit = raised }
        }
        return Int(limit.rlim_cur)
    }()
}
