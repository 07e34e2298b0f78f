#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The space of the file system holding a path, as an unprivileged writer sees it.
struct DiskSpace: Sendable, Equatable {
    /// Bytes a process without root may still write.
    var available: UInt64
    var size: UInt64

    /// The space of the file system holding `path`; `nil` when it cannot be read.
    static func of(_ path: String) -> DiskSpace? {
        var facts = statvfs()
        guard statvfs(path, &facts) == 0 else { return nil }
        let block = UInt64(facts.f_frsize)
        return DiskSpace(available: UInt64(facts.f_bavail) * block, size: UInt64(facts.f_blocks) * block)
    }
}
