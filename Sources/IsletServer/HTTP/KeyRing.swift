import Crypto
import Foundation
import IsletCore
import IsletEngine

/// API keys: generated from 32 random bytes, stored only as SHA-256 hashes, and resolved to
/// their owner on each request (the engine caches the answers; a device's replaced key leaves
/// the cache before the replacement is acknowledged).
struct KeyRing: Sendable {
    let engine: Engine

    /// Who `key` speaks for, or `nil` when it is no key of this server.
    func owner(of key: String) async throws -> KeyOwner? {
        try await engine.keyOwner(hash: Self.hash(key))
    }

    /// Who `key` speaks for; `unauthorized` when it is no key of this server.
    func requireOwner(of key: String) async throws -> KeyOwner {
        guard let owner = try await owner(of: key) else {
            throw IsletError(.unauthorized, "The API key is not valid for this server.")
        }
        return owner
    }

    /// A new key for `owner`; its prefix says whose it is (`islet_admin_…`, `islet_app_…`).
    static func generate(for owner: KeyOwner) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let secret = Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        switch owner {
        case .admin: return "islet_admin_" + secret
        case .app: return "islet_app_" + secret
        case .device: return "islet_device_" + secret
        case .client: return ClientKey.keyPrefix + secret
        case .installation: return "islet_inst_" + secret
        }
    }

    /// A new key for an app, replacing its earlier key at once.
    func issueAppKey(bundleId: BundleID) async throws -> String {
        let key = Self.generate(for: .app(bundleId))
        try await engine.replaceAppKey(bundleId: bundleId, hash: Self.hash(key))
        return key
    }

    /// A new key for a device's display, replacing its earlier key at once.
    func issueDeviceKey(deviceId: DeviceID) async throws -> String {
        let key = Self.generate(for: .device(deviceId))
        try await engine.replaceDeviceKey(deviceId: deviceId, hash: Self.hash(key))
        return key
    }

    /// The hash under which a key is stored.
    static func hash(_ key: String) -> String {
        var key = key
        return key.withUTF8 { utf8 in SHA256.hash(data: UnsafeRawBufferPointer(utf8)) }.hexEncoded
    }
}
