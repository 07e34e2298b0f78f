import Foundation
import IsletCore

/// A `POST /v1/projects/{project}/messages:send` body, read and checked as FCM checks it
/// (FCM HTTP v1, `projects.messages`): known fields only, exactly one target, `data` strings
/// only with none of the reserved keys, `android.priority` and `android.ttl` in their forms,
/// and a data payload of at most 4,096 bytes. What breaks a rule is an `FCMError` with FCM's
/// status, error code and field, ready to answer.
public struct FCMSendRequest: Hashable, Sendable {
    /// `validate_only`: check the message, send nothing.
    public var validateOnly: Bool
    public var message: FCMMessage

    /// The largest body read at all: FCM's payload limit is 4,096 bytes, and a body past this is
    /// refused before it is parsed.
    public static let maximumBody = 64 * 1024

    public init(body: Data) throws(FCMError) {
        guard body.count <= Self.maximumBody else { throw FCMError.tooBig(body.count) }
        guard let top = try? JSONDecoder().decode(JSONValue.self, from: body), let object = top.objectValue else {
            throw FCMError.invalidJSON("Invalid JSON payload received. The body must be a JSON object with \"message\".", field: nil)
        }
        try FCMError.refuseUnknown(object, known: ["message", "validate_only", "validateOnly"], at: nil)
        switch object["validate_only"] ?? object["validateOnly"] {
        case nil: validateOnly = false
        case .bool(let value)?: validateOnly = value
        case let other?: throw FCMError.invalidJSON("Invalid value at 'validate_only' (TYPE_BOOL), \(other.typeName)", field: "validate_only")
        }
        guard let message = object["message"]?.objectValue else {
            throw FCMError.invalidArgument("Request contains an invalid argument: message is required and must be an object.", field: "message")
        }
        self.message = try FCMMessage(message)
    }
}

/// A message's parts Islet uses when it plays Google: where it goes, its data, and its
/// Android options.
public struct FCMMessage: Hashable, Sendable {
    public enum Target: Hashable, Sendable {
        /// A device's registration token.
        case token(String)
        /// An app instance's Firebase installation ID.
        case fid(String)
        case topic(String)
        case condition(String)
    }

    public var target: Target
    /// `data` with `android.data` over it: what the app receives.
    public var data: [String: String]
    public var android: AndroidOptions
    /// Whether the message carries a `notification` (shown by the system, not by the app).
    public var hasNotification: Bool

    /// FCM's limit on a message's payload, in bytes.
    public static let maximumPayload = 4096
    /// FCM's longest `ttl`: 28 days.
    public static let maximumTTL: TimeInterval = 28 * 86_400
    /// The longest registration token read: FCM's are about 160 characters.
    public static let maximumTokenLength = 4096

    /// What `android` says.
    public struct AndroidOptions: Hashable, Sendable {
        public enum Priority: String, Hashable, Sendable {
            case normal = "NORMAL"
            case high = "HIGH"
        }

        public var priority: Priority = .normal
        /// `ttl` in seconds; `nil` when the message does not say (FCM's default is 28 days).
        public var ttl: TimeInterval?
        public var collapseKey: String?
        public var restrictedPackageName: String?

        public init() {}
    }

    init(_ object: [String: JSONValue]) throws(FCMError) {
        try FCMError.refuseUnknown(
            object,
            known: ["name", "data", "notification", "android", "webpush", "apns", "fcm_options", "fcmOptions", "token", "fid", "topic", "condition"],
            at: "message"
        )
        let targets: [Target] = try [
            Self.text(object["token"], at: "message.token").map(Target.token),
            Self.text(object["fid"], at: "message.fid").map(Target.fid),
            Self.text(object["topic"], at: "message.topic").map(Target.topic),
            Self.text(object["condition"], at: "message.condition").map(Target.condition),
        ].compactMap { $0 }
        guard targets.count == 1, let target = targets.first else {
            throw FCMError.invalidArgument(
                "Request contains an invalid argument: exactly one of message.token, message.fid, message.topic or message.condition must be given (\(targets.count) were).",
                field: "message"
            )
        }
        if case .token(let token) = target {
            guard (1...Self.maximumTokenLength).contains(token.utf8.count), token.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
                throw FCMError.invalidArgument("The registration token is not a valid FCM registration token", field: "message.token")
            }
        }
        if case .fid(let fid) = target, !FCMAddress.isInstallationId(fid) {
            throw FCMError.invalidArgument("The installation ID is not a valid Firebase installation ID", field: "message.fid")
        }
        if case .topic(let topic) = target {
            let name = topic.hasPrefix("/topics/") ? String(topic.dropFirst("/topics/".count)) : topic
            guard !name.isEmpty, name.utf8.count <= 900, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.~%".contains($0)) }) else {
                throw FCMError.invalidArgument("Request contains an invalid argument: the topic name is not valid.", field: "message.topic")
            }
        }
        self.target = target
        var data = try Self.data(object["data"], at: "message.data")
        android = AndroidOptions()
        hasNotification = object["notification"] != nil && object["notification"] != .null
        if let value = object["android"], value != .null {
            guard let options = value.objectValue else {
                throw FCMError.invalidJSON("Invalid value at 'message.android' (type.googleapis.com/google.firebase.fcm.v1.AndroidConfig), \(value.typeName)", field: "message.android")
            }
            try FCMError.refuseUnknown(
                options,
                known: [
                    "collapse_key", "collapseKey", "priority", "ttl", "restricted_package_name", "restrictedPackageName", "data",
                    "notification", "fcm_options", "fcmOptions", "direct_boot_ok", "directBootOk",
                ],
                at: "message.android"
            )
            data.merge(try Self.data(options["data"], at: "message.android.data")) { _, android in android }
            if let priority = try Self.text(options["priority"], at: "message.android.priority") {
                guard let value = AndroidOptions.Priority(rawValue: priority.uppercased()) else {
                    throw FCMError.invalidJSON(
                        "Invalid value at 'message.android.priority' (type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority), \"\(priority.prefix(40))\"",
                        field: "message.android.priority"
                    )
                }
                android.priority = value
            }
            if let ttl = try Self.text(options["ttl"], at: "message.android.ttl") {
                android.ttl = try Self.duration(ttl, at: "message.android.ttl")
            }
            android.collapseKey = try Self.text(options["collapse_key"] ?? options["collapseKey"], at: "message.android.collapse_key")
            android.restrictedPackageName = try Self.text(
                options["restricted_package_name"] ?? options["restrictedPackageName"], at: "message.android.restricted_package_name"
            )
            hasNotification = hasNotification || (options["notification"] != nil && options["notification"] != .null)
        }
        let size = data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        guard size <= Self.maximumPayload else { throw FCMError.tooBig(size) }
        self.data = data
    }

    /// A string field, or `nil` when absent or null.
    private static func text(_ value: JSONValue?, at field: String) throws(FCMError) -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?: return text
        case let other?: throw FCMError.invalidJSON("Invalid value at '\(field)' (TYPE_STRING), \(other.typeName)", field: field)
        }
    }

    /// A `data` map: strings to strings, none of FCM's reserved keys.
    private static func data(_ value: JSONValue?, at field: String) throws(FCMError) -> [String: String] {
        guard let value, value != .null else { return [:] }
        guard let object = value.objectValue else {
            throw FCMError.invalidJSON("Invalid value at '\(field)' (map<string, string>), \(value.typeName)", field: field)
        }
        var data: [String: String] = [:]
        for (key, member) in object {
            guard case .string(let text) = member else {
                throw FCMError.invalidJSON("Invalid value at '\(field)[\(key.prefix(40))].value' (TYPE_STRING), \(member.typeName)", field: "\(field).\(key.prefix(40))")
            }
            let lower = key.lowercased()
            guard !["from", "notification", "message_type"].contains(lower), !lower.hasPrefix("google"), !lower.hasPrefix("gcm"), !key.isEmpty else {
                throw FCMError.invalidArgument("Invalid data payload key: \(key.prefix(40))", field: field)
            }
            data[key] = text
        }
        return data
    }

    /// A protobuf `Duration` as JSON writes it: seconds with up to nine decimals and an `s`,
    /// from 0 to 28 days.
    private static func duration(_ text: String, at field: String) throws(FCMError) -> TimeInterval {
        let body = text.hasSuffix("s") ? text.dropLast() : Substring("x")
        let parts = body.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let digits: (Substring) -> Bool = { part in part.allSatisfy { $0.isASCII && $0.isNumber } }
        guard (1...2).contains(parts.count), !parts[0].isEmpty, parts[0].count <= 12, digits(parts[0]),
            parts.count == 1 || (parts[1].count <= 9 && digits(parts[1])), let seconds = Double(body)
        else {
            throw FCMError.invalidJSON("Invalid value at '\(field)' (type.googleapis.com/google.protobuf.Duration), \"\(text.prefix(40))\"", field: field)
        }
        guard seconds <= FCMMessage.maximumTTL else {
            throw FCMError.invalidArgument("Request contains an invalid argument: \(field) must be at most 2419200s (28 days).", field: field)
        }
        return seconds
    }
}

/// FCM's refusal of a request, as its body says it: `{"error": {"code", "message", "status",
/// "details": [FcmError with its errorCode, BadRequest with the field]}}`.
public struct FCMError: Error, Hashable, Sendable {
    public var status: Int
    /// FCM's error code, for the `FcmError` detail (none for a body FCM cannot parse).
    public var errorCode: FCMErrorCode?
    /// Google's status text.
    public var googleStatus: String
    public var message: String
    /// The field at fault, for the `BadRequest` detail.
    public var field: String?

    public init(status: Int, errorCode: FCMErrorCode?, googleStatus: String, message: String, field: String? = nil) {
        self.status = status
        self.errorCode = errorCode
        self.googleStatus = googleStatus
        self.message = message
        self.field = field
    }

    /// One of FCM's error codes, with its status.
    public init(_ code: FCMErrorCode, _ message: String, field: String? = nil) {
        self.init(status: code.statusCode, errorCode: code, googleStatus: code.googleStatus, message: message, field: field)
    }

    /// A body that does not parse as the message's schema: FCM answers it without an error code.
    static func invalidJSON(_ message: String, field: String?) -> FCMError {
        FCMError(status: 400, errorCode: nil, googleStatus: "INVALID_ARGUMENT", message: message, field: field)
    }

    static func invalidArgument(_ message: String, field: String) -> FCMError {
        FCMError(.invalidArgument, message, field: field)
    }

    static func tooBig(_ size: Int) -> FCMError {
        FCMError(.invalidArgument, "Request contains an invalid argument: the message is too big (\(size) bytes; at most \(FCMMessage.maximumPayload)).", field: "message")
    }

    /// Refuses a member the schema does not name, as Google's JSON parser does.
    static func refuseUnknown(_ object: [String: JSONValue], known: Set<String>, at path: String?) throws(FCMError) {
        guard let unknown = object.keys.sorted().first(where: { !known.contains($0) }) else { return }
        let at = path.map { " at '\($0)'" } ?? ""
        throw invalidJSON("Invalid JSON payload received. Unknown name \"\(unknown.prefix(60))\"\(at): Cannot find field.", field: path)
    }

    /// The error body, as FCM writes it.
    public var body: Data {
        var details: [JSONValue] = []
        if let errorCode {
            details.append(["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": .string(errorCode.rawValue)])
        }
        if let field {
            details.append([
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [["field": .string(field), "description": .string(message)]],
            ])
        }
        let error: JSONValue = [
            "error": ["code": .integer(Int64(status)), "message": .string(message), "status": .string(googleStatus), "details": .array(details)],
        ]
        return (try? JSONEncoder().encode(error)) ?? Data()
    }
}
