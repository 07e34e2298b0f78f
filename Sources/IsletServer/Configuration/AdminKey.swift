import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import IsletCore
import IsletEngine

/// The admin key: the configured one, or the one kept in `admin.key` in the data directory
/// (created with a fresh key, readable by its owner only, on first start). The CLI on the same
/// machine reads that file, so local use needs no key handling at all.
enum AdminKey {
    /// The key and, when it lives in the data directory, the file that holds it.
    static func resolve(configuration: IsletConfiguration) throws -> (key: String, path: String?) {
        if let configured = configuration.server.adminKey {
            guard configured.count >= 16 else {
                throw ConfigurationError(key: "server.adminKey", problem: "an admin key needs at least 16 characters.")
            }
            return (configured, nil)
        }
        let path = configuration.store.adminKeyPath
        if let existing = try? String(contentsOfFile: path, encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines), !existing.isEmpty
        {
            return (existing, path)
        }
        let key = KeyRing.generate(for: .admin)
        // Created readable by its owner only from the first byte, whatever the umask.
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw IsletError(.internalError, "Cannot create the admin key file \(path): \(String(cString: strerror(errno))).")
        }
        defer { close(descriptor) }
        let bytes = Array((key + "\n").utf8)
        guard write(descriptor, bytes, bytes.count) == bytes.count else {
            throw IsletError(.internalError, "Cannot write the admin key to \(path): \(String(cString: strerror(errno))).")
        }
        return (key, path)
    }
}
