import Foundation
import IsletCore

/// The provider side for Android phones (docs/android.md): an app's FCM credential and the
/// phones' registration tokens.
extension Engine {
    /// Registers (or replaces) an app's FCM credential. The service account must already be
    /// read and checked; the transport checks what it sends with. Held deliveries are released.
    public func putFCMCredential(_ stored: StoredFCMCredential) async throws -> FCMCredential {
        try await transport?.check(stored)
        return try await write { tx in
            _ = try tx.requireApp(stored.credential.bundleId)
            var stored = stored
            stored.credential.failure = nil
            try tx.putFCMCredential(stored)
            try Self.release(bundleId: stored.credential.bundleId, in: tx)
            return stored.credential
        }
    }

    /// An app's FCM credential, without its private key, or `keyNotFound`.
    public func fcmCredential(bundleId: BundleID) async throws -> FCMCredential {
        try await read { store in
            _ = try store.requireApp(bundleId)
            guard let stored = try store.fcmCredential(bundleId: bundleId) else {
                throw IsletError(.keyNotFound, "\(bundleId) has no FCM credential: PUT /v1/apps/\(bundleId)/fcm.")
            }
            return stored.credential
        }
    }

    /// Stops delivery to Android phones for an app; deliveries wait in the outbox.
    public func deleteFCMCredential(bundleId: BundleID) async throws {
        try await write { tx in
            _ = try tx.requireApp(bundleId)
            guard try tx.deleteFCMCredential(bundleId: bundleId) else {
                throw IsletError(.keyNotFound, "\(bundleId) has no FCM credential.")
            }
        }
    }

    /// Records where FCM reaches an Android phone's app — its registration token or its Firebase
    /// installation ID — replacing the one it had, of either kind; a device not yet known is
    /// created as an Android phone.
    public func registerFCMAddress(_ address: FCMAddress, deviceId: DeviceID, bundleId: BundleID) async throws -> PhoneToken {
        try address.validate()
        try Device.validate(id: deviceId)
        return try await write { tx in
            _ = try tx.requireApp(bundleId)
            if let device = try tx.device(deviceId) {
                guard device.platform == .android else {
                    throw IsletError(
                        .invalidRequest,
                        "Device \(deviceId) is an iPhone: an FCM \(address.name) belongs to an Android phone (POST /v1/devices {\"id\": …, \"platform\": \"android\"}, or a new device id)."
                    )
                }
            } else {
                let device = Device(id: deviceId, name: deviceId, createdAt: tx.now, platform: .android)
                try tx.insertDevice(device)
                for app in try tx.apps() {
                    try tx.issueAppToken(device: device, bundleId: app.bundleId)
                }
            }
            if let current = try tx.phoneFCMToken(deviceId: deviceId, bundleId: bundleId), FCMAddress(current) == address { return current }
            try Self.claimToken(address.value, for: bundleId, in: tx)
            try tx.retirePhoneTokens(.fcm(deviceId: deviceId, bundleId: bundleId), reason: "replaced")
            let recorded = PhoneToken(
                token: address.value, kind: address.kind, bundleId: bundleId, deviceId: deviceId, environment: .production, createdAt: tx.now
            )
            try Self.record(recorded, in: tx)
            try Self.release(bundleId: bundleId, in: tx)
            return recorded
        }
    }
}
