import Foundation
import IsletCore
import IsletEngine

/// Android phones' tables as the engine reads them (docs/android.md): FCM credentials and
/// phones' registration tokens (sending), and — playing Google — the accounts, access tokens
/// and notifications of this server's own Android phones.
extension SQLReading {
    public func fcmCredential(bundleId: BundleID) throws -> StoredFCMCredential? {
        try session.row("SELECT * FROM fcmCredential WHERE bundleId = $1", [bundleId], SQLRows.fcmCredential)
    }

    public func refusedFCMCredentials() throws -> [FCMCredential] {
        try session.rows("SELECT * FROM fcmCredential WHERE failure IS NOT NULL ORDER BY bundleId", [], SQLRows.fcmCredential).map(\.credential)
    }

    public func phoneFCMToken(deviceId: DeviceID, bundleId: BundleID) throws -> PhoneToken? {
        try session.row(
            """
            SELECT * FROM phoneToken WHERE kind IN ('fcm', 'fid') AND deviceId = $1 AND bundleId = $2 AND retiredAt IS NULL
            ORDER BY createdAt DESC LIMIT 1
            """,
            [deviceId, bundleId], SQLRows.phoneToken
        )
    }

    public func issuedFCMAddresses(deviceId: DeviceID, bundleId: BundleID) throws -> (token: String?, fid: String?) {
        let issued = try session.rows(
            "SELECT kind, token FROM pushToken WHERE kind IN ('fcm', 'fid') AND deviceId = $1 AND bundleId = $2 AND retiredAt IS NULL",
            [deviceId, bundleId]
        ) { row in (kind: try row["kind", as: String.self], token: try row["token", as: String.self]) }
        return (issued.first { $0.kind == "fcm" }?.token, issued.first { $0.kind == "fid" }?.token)
    }

    public func issuedAccounts() throws -> [IssuedAccount] {
        try session.rows("SELECT * FROM fcmServiceAccount ORDER BY createdAt", []) { row in
            IssuedAccount(
                projectId: try row["projectId"], clientEmail: try row["clientEmail"], privateKeyId: try row["privateKeyId"],
                publicKey: try row["publicKey"]
            )
        }
    }

    public func accessGrant(hash: String) throws -> AccessGrant? {
        try session.row("SELECT * FROM fcmAccessToken WHERE hash = $1", [hash]) { row in
            AccessGrant(
                hash: try row["hash"], clientEmail: try row["clientEmail"], projectId: try row["projectId"],
                expiresAt: try row.date("expiresAt")
            )
        }
    }

    public func androidNotification(deviceId: DeviceID, bundleId: BundleID, tag: String) throws -> AndroidNotificationRecord? {
        try session.row(
            "SELECT * FROM androidNotification WHERE deviceId = $1 AND bundleId = $2 AND tag = $3 ORDER BY receivedAt DESC LIMIT 1",
            [deviceId, bundleId, tag], SQLRows.androidNotification
        )
    }

    public func androidNotifications(deviceId: DeviceID) throws -> [AndroidNotificationRecord] {
        try session.rows(
            "SELECT * FROM androidNotification WHERE deviceId = $1 ORDER BY receivedAt DESC, activityId", [deviceId], SQLRows.androidNotification
        )
    }
}

extension SQLWriting {
    public func putFCMCredential(_ stored: StoredFCMCredential) throws {
        let credential = stored.credential
        try session.execute(
            """
            INSERT INTO fcmCredential (bundleId, projectId, clientEmail, privateKeyId, tokenUri, serviceAccount, url, caCertificate, createdAt, failure)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
            ON CONFLICT (bundleId) DO UPDATE SET projectId = excluded.projectId, clientEmail = excluded.clientEmail,
                privateKeyId = excluded.privateKeyId, tokenUri = excluded.tokenUri, serviceAccount = excluded.serviceAccount,
                url = excluded.url, caCertificate = excluded.caCertificate, createdAt = excluded.createdAt, failure = excluded.failure
            """,
            [
                credential.bundleId, credential.projectId, credential.clientEmail, credential.privateKeyId, credential.tokenUri,
                stored.serviceAccount, credential.url, credential.caCertificate, credential.createdAt.timeIntervalSince1970, credential.failure,
            ]
        )
    }

    public func deleteFCMCredential(bundleId: BundleID) throws -> Bool {
        try session.count("DELETE FROM fcmCredential WHERE bundleId = $1", [bundleId]) > 0
    }

    public func setFCMCredentialFailure(bundleId: BundleID, failure: String?) throws {
        try session.execute("UPDATE fcmCredential SET failure = $1 WHERE bundleId = $2", [failure, bundleId])
    }

    public func insertIssuedAccount(_ account: IssuedAccount) throws {
        try session.execute(
            "INSERT INTO fcmServiceAccount (clientEmail, projectId, privateKeyId, publicKey, createdAt) VALUES ($1, $2, $3, $4, $5)",
            [account.clientEmail, account.projectId, account.privateKeyId, account.publicKey, now.timeIntervalSince1970]
        )
    }

    public func insertAccessGrant(_ grant: AccessGrant) throws {
        try session.execute(
            "INSERT INTO fcmAccessToken (hash, clientEmail, projectId, expiresAt) VALUES ($1, $2, $3, $4)",
            [grant.hash, grant.clientEmail, grant.projectId, grant.expiresAt.timeIntervalSince1970]
        )
    }

    public func putAndroidNotification(_ record: AndroidNotificationRecord) throws {
        try session.execute(
            """
            INSERT INTO androidNotification (activityId, deviceId, bundleId, tag, islet, messageName, receivedAt)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            ON CONFLICT (activityId) DO UPDATE SET islet = excluded.islet, messageName = excluded.messageName,
                receivedAt = excluded.receivedAt
            """,
            [
                record.activityId, record.deviceId, record.bundleId, record.tag, record.islet, record.messageName,
                record.receivedAt.timeIntervalSince1970,
            ]
        )
    }
}
