import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import IsletCore

/// Holds an exclusive lock on the data directory for the life of the server, so a second
/// `islet serve` on the same data fails at once instead of corrupting timers and streams.
public final class DataDirectoryLock: Sendable {
    private let descriptor: Int32

    public init(directory: String) throws {
        // The descriptor is stored only once the lock is held: a failed init must not leave
        // deinit a descriptor to close a second time (by then it may be another file's).
        descriptor = try Self.lock(directory: directory)
    }

    private static func lock(directory: String) throws -> Int32 {
        let path = (directory as NSString).appendingPathComponent("islet.lock")
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw IsletError(.internalError, "Cannot open \(path): \(String(cString: strerror(errno))).")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            throw IsletError(
                .unavailable, "Another islet server is using the data directory \(directory); stop it or pass another --data."
            )
        }
        return descriptor
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }

    /// Creates the data directory (and its parents), readable by its owner only.
    static func createDirectory(_ path: String) throws {
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]
        )
    }
}
