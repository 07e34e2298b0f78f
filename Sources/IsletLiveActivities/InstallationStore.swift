import Foundation
#if canImport(Security)
import Security
#endif

/// What the library keeps between launches: the installation Islet registered, its credential,
/// and what it last reported — so a relaunch reports only what changed.
public struct StoredInstallation: Codable, Hashable, Sendable {
    /// The server it was registered with: a credential goes to that server only.
    public var server: String
    public var bundleId: String
    public var installationId: String
    /// The installation's credential (`islet_inst_…`).
    public var credential: String
    /// The user it was signed in as, if any.
    public var userId: String?
    /// What was last reported and taken, by what it reports: `pushToStart:<type>`,
    /// `update:<activity>`, `state:<activity>` → the token's hex or the state.
    public var reported: [String: String]

    public init(server: String, bundleId: String, installationId: String, credential: String, userId: String? = nil, reported: [String: String] = [:]) {
        self.server = server
        self.bundleId = bundleId
        self.installationId = installationId
        self.credential = credential
        self.userId = userId
        self.reported = reported
    }
}

/// Where the library keeps its installation: the keychain on Apple's platforms
/// (`KeychainInstallationStore`), a file elsewhere (`FileInstallationStore`), or your own.
public protocol InstallationStore: Sendable {
    /// What was saved, if anything.
    func load() -> StoredInstallation?
    /// Keeps `installation`, replacing what was saved.
    func save(_ installation: StoredInstallation)
    /// Forgets it (the credential was refused: the installation registers again).
    func clear()
}

/// Keeps the installation in a file, readable by its owner only.
public struct FileInstallationStore: InstallationStore {
    public let url: URL

    public init(url: URL) {
        self.url = url
    }

    public func load() -> StoredInstallation? {
        guard let data = try? Data(contentsOf: url) else { return nil }
        return try? JSONDecoder().decode(StoredInstallation.self, from: data)
    }

    public func save(_ installation: StoredInstallation) {
        guard let data = try? JSONEncoder().encode(installation) else { return }
        try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        // Written aside and moved over, so a launch killed mid-write keeps the earlier.
        let aside = url.appendingPathExtension("new")
        guard FileManager.default.createFile(atPath: aside.path, contents: data, attributes: [.posixPermissions: 0o600]) else { return }
        // rename(2) replaces what is there, or puts it there when nothing is (Foundation's
        // replaceItemAt fails on Linux when there is nothing to replace).
        if rename(aside.path, url.path) != 0 { try? FileManager.default.removeItem(at: aside) }
    }

    public func clear() {
        try? FileManager.default.removeItem(at: url)
    }
}

#if canImport(Security)
/// Keeps the installation in the keychain, as a generic password of this app's, readable only
/// after the phone's first unlock (a push-to-start can wake the app before any unlock).
public struct KeychainInstallationStore: InstallationStore {
    public let service: String

    public init(service: String = "islet.live-activities") {
        self.service = service
    }

    private var query: [String: Any] {
        [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: "installation"]
    }

    public func load() -> StoredInstallation? {
        var query = self.query
        query[kSecReturnData as String] = true
        var item: CFTypeRef?
        guard SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess, let data = item as? Data else { return nil }
        return try? JSONDecoder().decode(StoredInstallation.self, from: data)
    }

    public func save(_ installation: StoredInstallation) {
        guard let data = try? JSONEncoder().encode(installation) else { return }
        let attributes: [String: Any] = [kSecValueData as String: data, kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock]
        if SecItemUpdate(query as CFDictionary, attributes as CFDictionary) == errSecItemNotFound {
            SecItemAdd(query.merging(attributes) { $1 } as CFDictionary, nil)
        }
    }

    public func clear() {
        SecItemDelete(query as CFDictionary)
    }
}
#endif
