import Foundation
import IsletCore
import Synchronization

extension Engine {
    // MARK: Apps

    /// Creates an app with its first API key (stored as a hash only); every device gets a
    /// push-to-start token for it.
    public func createApp(_ app: App, keyHash: String) async throws {
        try App.validate(bundleId: app.bundleId)
        try await write { tx in
            guard try tx.app(app.bundleId) == nil else {
                throw IsletError(
                    .appAlreadyExists,
                    "An app \(app.bundleId) already exists; a new key for it: islet apps key \(app.bundleId) (POST /v1/apps/\(app.bundleId)/key)."
                )
            }
            try tx.insertApp(app)
            try tx.replaceKeys(of: .app(app.bundleId), hash: keyHash)
            for device in try tx.devices() {
                try tx.issueAppToken(device: device, bundleId: app.bundleId)
            }
        }
    }

    /// Makes the key with this hash the only key of an app; the earlier one stops working before
    /// this returns (a lost key is replaced this way).
    public func replaceAppKey(bundleId: BundleID, hash: String) async throws {
        try await write { tx in
            _ = try tx.requireApp(bundleId)
            try tx.replaceKeys(of: .app(bundleId), hash: hash)
            tx.effects.keysReplaced.insert(.app(bundleId))
        }
    }

    /// Every app, by bundle identifier.
    public func apps() async throws -> [App] {
        try await read { store in try store.apps() }
    }

    /// One app, or `appNotFound`.
    public func app(_ bundleId: BundleID) async throws -> App {
        try await read { store in try store.requireApp(bundleId) }
    }

    /// Makes the key with this hash the only admin key.
    public func replaceAdminKey(hash: String) async throws {
        try await write { tx in try tx.replaceKeys(of: .admin, hash: hash) }
    }

    /// Who the API key with this hash speaks for, if anyone. Answers are cached: a key never
    /// changes owner, and a device's replaced key leaves the cache before the replacement is
    /// acknowledged.
    public func keyOwner(hash: String) async throws -> KeyOwner? {
        if let owner = cachedKeyOwner(hash: hash) { return owner }
        let owner = try await read { store in try store.keyOwner(hash: hash) }
        if let owner { keys.remember(owner, for: hash) }
        return owner
    }

    /// Who the key whose hash is `hash` speaks for, if this node has it in memory: what a route
    /// served on its event loop may use without a read (`keyOwner` fills it).
    public func cachedKeyOwner(hash: String) -> KeyOwner? {
        keys.owner(of: hash)
    }

    // MARK: Devices

    /// Creates the `default` device if it does not exist yet.
    public func ensureDefaultDevice() async throws {
        try await write { tx in
            if try tx.device(.defaultDevice) == nil {
                try tx.insertDevice(Device(id: .defaultDevice, name: "Default", createdAt: tx.now))
            }
        }
    }

    /// Creates a device; it gets a token for every app: a push-to-start token on an iPhone, an
    /// FCM registration token on an Android phone.
    public func createDevice(_ device: Device) async throws {
        try Device.validate(id: device.id)
        try await write { tx in
            guard try tx.device(device.id) == nil else {
                throw IsletError(.deviceAlreadyExists, "A device \(device.id) already exists.")
            }
            try tx.insertDevice(device)
            for app in try tx.apps() {
                try tx.issueAppToken(device: device, bundleId: app.bundleId)
            }
        }
    }

    /// Which installations' devices a listing of devices shows (docs/installations.md): an
    /// installation's device is its app's, not shared as the others are.
    public enum InstallationsShown: Sendable {
        case all
        case of(BundleID)
        case none
    }

    /// A page of the devices, by identifier, with the installations' that `installations` shows.
    public func devices(_ page: PageRequest<DeviceID>, installations: InstallationsShown = .all) async throws -> Page<Device> {
        try await read { store in
            let fetched = try store.devices(after: page.after, limit: page.limit + 1)
            return try page.page(of: fetched.map { (item: $0, place: $0.id) }) { device in
                guard Installation.isInstallationID(device.id) else { return true }
                switch installations {
                case .all: return true
                case .none: return false
                case .of(let bundleId): return try store.installation(device.id)?.bundleId == bundleId
                }
            }
        }
    }

    /// One device, or `deviceNotFound`.
    public func device(_ id: DeviceID) async throws -> Device {
        try await read { store in try store.requireDevice(id) }
    }

    /// Makes the key with this hash the only key of a device's display; the earlier one stops
    /// working before this returns.
    public func replaceDeviceKey(deviceId: DeviceID, hash: String) async throws {
        try await write { tx in
            _ = try tx.requireDevice(deviceId)
            // Its key is its installation's credential, which only the installation replaces.
            if try tx.installation(deviceId) != nil {
                throw IsletError(.forbidden, "Device \(deviceId) is an installation's (docs/installations.md); it has no display key.")
            }
            try tx.replaceKeys(of: .device(deviceId), hash: hash)
            tx.effects.keysReplaced.insert(.device(deviceId))
        }
    }

    // MARK: Settings

    /// A device's settings for every app (or only `bundleId`'s), defaults included.
    public func settings(deviceId: DeviceID, bundleId: BundleID? = nil) async throws -> [AppSettings] {
        try await read { store in try Self.settings(deviceId: deviceId, bundleId: bundleId, in: store) }
    }

    /// Gives an Android phone's app a Firebase installation ID, or retires the one it has, as
    /// the app opts in to being reached by it or asks for a registration token again.
    private static func switchInstallationId(_ enabled: Bool, of device: Device, bundleId: BundleID, in tx: any Transaction) throws -> String? {
        guard device.platform == .android else {
            throw IsletError(.invalidRequest, "Device \(device.id) is an iPhone: a Firebase installation ID belongs to an Android phone.")
        }
        let holder = TokenHolder.fid(deviceId: device.id, bundleId: bundleId)
        try tx.retireTokens(of: holder, reason: TokenRetirement(reason: enabled ? "rotated" : "tokenRequested", at: tx.now))
        guard enabled else { return nil }
        let fid = Tokens.installationId()
        try tx.addToken(fid, holder: holder)
        return fid
    }

    static func settings(deviceId: DeviceID, bundleId: BundleID?, in store: any StoreReading) throws -> [AppSettings] {
        _ = try store.requireDevice(deviceId)
        let bundleIds = try bundleId.map { [$0] } ?? store.apps().map(\.bundleId)
        return try bundleIds.map { try store.settings(deviceId: deviceId, bundleId: $0) }
    }

    /// Changes a device's settings for an app. Turning Live Activities off ends and dismisses the
    /// app's activities on that device, as iOS does; every change is an event producers see.
    /// On an Android phone, `fcmInstallationIdEnabled` gives the app a Firebase installation ID
    /// (or retires it: FCM answers `UNREGISTERED` for it from then on).
    ///
    /// - Returns: The settings as committed.
    public func updateSettings(
        deviceId: DeviceID, bundleId: BundleID, activitiesEnabled: Bool?, frequentUpdates: Bool?, fcmInstallationIdEnabled: Bool? = nil
    ) async throws -> AppSettings {
        let rules = self.rules
        return try await write { tx in
            let device = try tx.requireDevice(deviceId)
            _ = try tx.requireApp(bundleId)
            let before = try tx.settings(deviceId: deviceId, bundleId: bundleId)
            var after = before
            after.activitiesEnabled = activitiesEnabled ?? before.activitiesEnabled
            after.frequentUpdates = frequentUpdates ?? before.frequentUpdates
            if let enabled = fcmInstallationIdEnabled, enabled != (before.fcmInstallationId != nil) {
                after.fcmInstallationId = try Self.switchInstallationId(enabled, of: device, bundleId: bundleId, in: tx)
            }
            guard after != before else { return after }
            try tx.putSettings(after)
            try tx.append(.settingsChanged(after), bundleId: bundleId, deviceId: deviceId, activityId: nil)
            if before.activitiesEnabled, !after.activitiesEnabled {
                for var activity in try tx.shownActivities(bundleId: bundleId, deviceId: deviceId, attributesType: nil) {
                    try tx.change(&activity, .appDisabled, rules: rules)
                }
            }
            return after
        }
    }
}

/// Who API keys speak for, by hash: a key never changes owner, so answers stay valid until a
/// device's key is replaced, which evicts that device's. When other nodes share the store, a
/// key they replace is not heard of here, so an answer is kept for `lifetime` only.
final class KeyCache: Sendable {
    private let owners = Mutex<[String: (owner: KeyOwner, at: ContinuousClock.Instant)]>([:])
    private let lifetime: Duration?

    /// - Parameter lifetime: How long an answer is used; `nil`, until its owner's key is replaced.
    init(lifetime: Duration? = nil) {
        self.lifetime = lifetime
    }

    func owner(of hash: String) -> KeyOwner? {
        owners.withLock { owners in
            guard let entry = owners[hash] else { return nil }
            if let lifetime, ContinuousClock.now - entry.at > lifetime { return nil }
            return entry.owner
        }
    }

    func remember(_ owner: KeyOwner, for hash: String) {
        owners.withLock { owners in
            // Bounded: a flood of distinct valid keys cannot grow it without limit.
            if owners.count >= 10_000 { owners.removeAll(keepingCapacity: true) }
            owners[hash] = (owner, .now)
        }
    }

    /// Forgets the keys of owners whose key was replaced: the old key stops working at once.
    func forget(_ replaced: Set<KeyOwner>) {
        guard !replaced.isEmpty else { return }
        owners.withLock { owners in owners = owners.filter { !replaced.contains($0.value.owner) } }
    }
}
