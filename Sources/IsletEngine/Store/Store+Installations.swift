import Foundation
import IsletCore

/// What a store reads of an app's client keys and the installations they registered
/// (docs/installations.md).
public protocol InstallationReading {
    /// An app's client keys, oldest first, revoked ones too.
    func clientKeys(bundleId: BundleID) throws -> [ClientKey]
    /// One client key, if it exists.
    func clientKey(_ id: String) throws -> ClientKey?
    /// One installation, if it exists.
    func installation(_ id: String) throws -> Installation?
    /// An app's installations in id order after `after` (of one user's, when given), at most `limit`.
    func installations(bundleId: BundleID, userId: String?, after: String?, limit: Int) throws -> [Installation]
    /// How many installations a client key registered since `since`.
    func installationsRegistered(clientKeyId: String, since: Date) throws -> Int
    /// How many installations were registered from an address (its hash) since `since`.
    func installationsRegistered(addressHash: String, since: Date) throws -> Int
    /// How many installations an app holds.
    func installationCount(bundleId: BundleID) throws -> Int
    /// The secret an app's backend signs its users' ids with, if the app has one.
    func userVerificationSecret(bundleId: BundleID) throws -> String?
}

/// What a store writes of client keys and installations.
public protocol InstallationWriting {
    /// Keeps a new client key under its hash.
    func insertClientKey(_ key: ClientKey, hash: String) throws
    /// Marks a client key revoked: it resolves to no one from then on.
    func revokeClientKey(_ id: String, at date: Date) throws
    /// Counts an installation a client key registered, at `date`.
    func clientKeyUsed(_ id: String, at date: Date) throws
    /// Keeps a new installation, with the hash of the address that registered it.
    func insertInstallation(_ installation: Installation, addressHash: String) throws
    /// Says an installation's credential was used at `date`.
    func installationSeen(_ id: String, at date: Date) throws
    /// Makes an installation one user's phone, or (`nil`) a user of its own.
    func setInstallationUser(_ id: String, userId: String?) throws
    /// Revokes the credentials of the installations a client key registered; returns their ids.
    func revokeInstallations(clientKeyId: String) throws -> [String]
    /// Revokes one installation's credential.
    func revokeInstallation(_ id: String) throws
    /// Sets (or, with `nil`, removes) the secret an app's backend signs its users' ids with.
    func setUserVerificationSecret(bundleId: BundleID, secret: String?) throws
}
