import Foundation
import GRDB
import IsletCore

/// Broadcast channels as rows.
enum Channels {
    static func fetch(_ id: String, bundleId: BundleID, db: Database) throws -> BroadcastChannel? {
        try Row.fetchOne(db, sql: "SELECT * FROM channel WHERE id = ? AND bundleId = ?", arguments: [id, bundleId])
            .map(channel(from:))
    }

    static func channel(from row: Row) -> BroadcastChannel {
        BroadcastChannel(
            id: row["id"], bundleId: row["bundleId"], storagePolicy: row["storagePolicy"],
            createdAt: Date(timeIntervalSince1970: row["createdAt"])
        )
    }

    /// The channel's most recent message, if it keeps one and it has not expired.
    static func storedMessage(of channel: BroadcastChannel, now: Date, db: Database) throws -> Activity.PushedChange? {
        guard channel.storagePolicy == 1,
            let row = try Row.fetchOne(db, sql: "SELECT message, messageExpiresAt FROM channel WHERE id = ?", arguments: [channel.id]),
            let message: String = row["message"], let expires: Double = row["messageExpiresAt"],
            now.timeIntervalSince1970 < expires
        else { return nil }
        return try WireFormat.decoder().decode(Activity.PushedChange.self, from: Data(message.utf8))
    }
}

/// Registered activity types as rows.
enum ActivityTypes {
    static func fetch(bundleId: BundleID, name: String, db: Database) throws -> ActivityType? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT body FROM activityType WHERE bundleId = ? AND name = ?"), arguments: [bundleId, name])
            .map { try WireFormat.decoder().decode(ActivityType.self, from: Data($0.utf8)) }
    }
}
