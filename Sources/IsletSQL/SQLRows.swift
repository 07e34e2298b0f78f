import Foundation
import IsletCore
import IsletEngine

/// Rows to values, once for both databases.
public enum SQLRows {
    /// Recently written activities' bodies, decoded (`DecodedActivities`): an update reads back
    /// the body the change before it wrote, and decoding it was a change's largest cost.
    public static let decoded = DecodedActivities()

    /// The activity a stored body encodes.
    static func activity(_ id: ActivityID, body: String) throws -> Activity {
        try decoded.activity(id, body: body) ?? WireFormat.decoder().decode(Activity.self, from: Data(body.utf8))
    }

    /// A row of `SQLQueries.activityWithPhone`: the activity's id, the activity, its phone state.
    public static func activityWithPhone(_ row: any SQLRow) throws -> (ActivityID, Activity, PhoneActivity?) {
        let id: ActivityID = try row["lockedId"]
        let phone = try row["activityId", as: String?.self] == nil ? nil : try phoneActivity(row)
        return (id, try activity(id, body: try row["body"]), phone)
    }

    public static func app(_ row: any SQLRow) throws -> App {
        App(
            bundleId: try row["bundleId"], name: try row["name"], createdAt: try row.date("createdAt"), strictPushes: try row["strictPushes"],
            deliveryPaused: try row["deliveryPaused"]
        )
    }

    public static func device(_ row: any SQLRow) throws -> Device {
        Device(
            id: try row["id"], name: try row["name"], createdAt: try row.date("createdAt"),
            platform: DevicePlatform(rawValue: try row["platform"]) ?? .ios
        )
    }

    public static func layout(_ row: any SQLRow) throws -> LayoutRecord {
        LayoutRecord(
            bundleId: try row["bundleId"], attributesType: try row["attributesType"],
            layout: try WireFormat.decoder().decode(JSONValue.self, from: Data(try row["body", as: String.self].utf8)),
            revision: try row["revision"], updatedAt: try row.date("updatedAt")
        )
    }

    public static func providerKey(_ row: any SQLRow) throws -> ProviderKey {
        ProviderKey(
            keyId: try row["keyId"], teamId: try row["teamId"], bundleId: try row["bundleId"], publicKey: try row["publicKey"],
            createdAt: try row.date("createdAt"), kind: KeyScope(rawValue: try row["kind"]) ?? .topic,
            environment: try row["environment", as: String?.self].flatMap(APNsEnvironment.init(rawValue:))
        )
    }

    public static func channel(_ row: any SQLRow) throws -> BroadcastChannel {
        BroadcastChannel(
            id: try row["id"], bundleId: try row["bundleId"], storagePolicy: try row["storagePolicy"], createdAt: try row.date("createdAt"),
            environment: try row["environment", as: String?.self].flatMap(APNsEnvironment.init(rawValue:))
        )
    }

    public static func credential(_ row: any SQLRow) throws -> StoredCredential {
        StoredCredential(
            credential: DeliveryCredential(
                bundleId: try row["bundleId"], environment: APNsEnvironment(rawValue: try row["environment"]) ?? .development,
                teamId: try row["teamId"], keyId: try row["keyId"], kind: KeyScope(rawValue: try row["kind"]) ?? .team,
                topics: try row["topics", as: String?.self].flatMap { try? JSONDecoder().decode([String].self, from: Data($0.utf8)) },
                relatedKeyId: try row["relatedKeyId"], url: try row["url"], caCertificate: try row["caCertificate"],
                createdAt: try row.date("createdAt"), failure: try row["failure"]
            ),
            privateKey: try row["privateKey"]
        )
    }

    public static func fcmCredential(_ row: any SQLRow) throws -> StoredFCMCredential {
        StoredFCMCredential(
            credential: FCMCredential(
                bundleId: try row["bundleId"], projectId: try row["projectId"], clientEmail: try row["clientEmail"],
                privateKeyId: try row["privateKeyId"], tokenUri: try row["tokenUri"], url: try row["url"],
                caCertificate: try row["caCertificate"], createdAt: try row.date("createdAt"), failure: try row["failure"]
            ),
            serviceAccount: try row["serviceAccount"]
        )
    }

    public static func androidNotification(_ row: any SQLRow) throws -> AndroidNotificationRecord {
        AndroidNotificationRecord(
            activityId: try row["activityId"], deviceId: try row["deviceId"], bundleId: try row["bundleId"], tag: try row["tag"],
            islet: try row["islet"], messageName: try row["messageName"], receivedAt: try row.date("receivedAt")
        )
    }

    public static func phoneToken(_ row: any SQLRow) throws -> PhoneToken {
        var token = PhoneToken(
            token: try row["token"], kind: PhoneToken.Kind(rawValue: try row["kind"]) ?? .update, bundleId: try row["bundleId"],
            deviceId: try row["deviceId"], attributesType: try row["attributesType"], activityId: try row["activityId"],
            environment: APNsEnvironment(rawValue: try row["environment"]) ?? .development, createdAt: try row.date("createdAt")
        )
        token.retiredAt = try row.optionalDate("retiredAt")
        token.retiredReason = try row["retiredReason"]
        token.lastAt = try row.optionalDate("lastAt")
        token.lastStatus = try row["lastStatus"]
        token.lastReason = try row["lastReason"]
        return token
    }

    /// Moments stored as comma-separated Unix seconds (a budget's sends).
    public static func dates(_ text: String?) -> [Date] {
        (text ?? "").split(separator: ",").compactMap { Double($0) }.map(Date.init(timeIntervalSince1970:))
    }

    /// Moments as `dates` reads them.
    public static func text(dates: [Date]) -> String {
        dates.map { String($0.timeIntervalSince1970) }.joined(separator: ",")
    }

    public static func phoneActivity(_ row: any SQLRow) throws -> PhoneActivity {
        // Its `budgeted` column is unused since the budget is the app's on the phone (`phoneBudget`).
        PhoneActivity(
            activityId: try row["activityId"], bundleId: try row["bundleId"], deviceId: try row["deviceId"],
            environment: APNsEnvironment(rawValue: try row["environment"]) ?? .development,
            platform: DevicePlatform(rawValue: try row["platform"]) ?? .ios, channelId: try row["channelId"],
            state: PhoneActivity.State(rawValue: try row["state"]) ?? .active
        )
    }

    /// A delivery; one whose order, event or state this version does not know reads as failed,
    /// so no sender takes it.
    public static func delivery(_ row: any SQLRow) throws -> Delivery {
        let activityId: ActivityID? = try row["activityId"]
        let order = Delivery.Order(key: try row["orderKey"])
        let event = Delivery.Event(rawValue: try row["event"])
        let state = order == nil || event == nil ? nil : Delivery.State(rawValue: try row["state"])
        return Delivery(
            id: try row["id"], order: order ?? .activity(activityId ?? ""), activityId: activityId, bundleId: try row["bundleId"],
            deviceId: try row["deviceId"], channelId: try row["channelId"], event: event ?? .update, payload: try row["payload"],
            alert: try row["alert"], expiration: try row.optionalDate("expiration"),
            state: state ?? .failed, attempts: try row["attempts"],
            nextAttemptAt: try row.date("nextAttemptAt"), leaseUntil: try row.optionalDate("leaseUntil"),
            createdAt: try row.date("createdAt"), finishedAt: try row.optionalDate("finishedAt"), apnsId: try row["apnsId"],
            traceparent: try row["traceparent"]
        )
    }

    /// An event, or `nil` for a type this version does not know.
    public static func event(_ row: any SQLRow) throws -> EncodedEvent? {
        guard let type = EventType(rawValue: try row["type"]) else { return nil }
        return EncodedEvent(
            id: try row["id"], type: type, time: try row.date("time"), bundleId: try row["bundleId"], deviceId: try row["deviceId"],
            activityId: try row["activityId"], dataJSON: try row["data"]
        )
    }
}
