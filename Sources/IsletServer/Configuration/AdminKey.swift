import Foundation
import IsletCore
import IsletStore

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
        guard FileManager.default.createFile(
            atPath: path, contents: Data((key + "\n").utf8), attributes: [.posixPermissions: 0o600]
        ) else {
            throw IsletError(.internalError, "Cannot write the admin key to \(path).")
        }
        return (key, path)
    }
}
