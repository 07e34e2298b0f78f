import Configuration
import Foundation
import IsletCore
import IsletEngine
import Logging

extension IsletConfiguration {
    /// Reads every setting from `reader`, keeping the default for each one that is not set.
    ///
    /// Values are checked strictly: a setting that is present but malformed is an error that
    /// names the key, never a silent fallback to the default.
    public init(reader: ConfigReader) throws {
        self.init()
        let settings = SettingsReader(reader: reader)
        server.host = try settings.string("server.host") ?? server.host
        server.port = try settings.int("server.port", in: 0...65535) ?? server.port
        server.maxBodySize = try settings.int("server.maxBodySize", in: 1024...(64 << 20)) ?? server.maxBodySize
        server.adminKey = try settings.string("server.adminKey", secret: true)
        server.pages = try settings.directory("server.pages")
        server.keylessLoopback = try settings.bool("server.keylessLoopback") ?? server.keylessLoopback
        server.maxConnections = try settings.int("server.maxConnections", in: 1...1_000_000)
        server.requestHeadTimeout = try settings.timeout("server.requestHeadTimeout") ?? server.requestHeadTimeout
        server.requestBodyTimeout = try settings.timeout("server.requestBodyTimeout") ?? server.requestBodyTimeout
        server.minBodyRate = try settings.int("server.minBodyRate", in: 1...(1 << 30)) ?? server.minBodyRate
        server.idleTimeout = try settings.timeout("server.idleTimeout") ?? server.idleTimeout
        server.writeTimeout = try settings.timeout("server.writeTimeout") ?? server.writeTimeout
        server.shutdownTimeout = try settings.timeout("server.shutdownTimeout") ?? server.shutdownTimeout
        server.hotRoutes = try settings.bool("server.hotRoutes") ?? server.hotRoutes
        store.dataDirectory = try settings.string("store.dataDirectory") ?? store.dataDirectory
        store.database = try settings.string("store.database", secret: true).flatMap { $0 == "sqlite" ? nil : $0 }
        if let database = store.database {
            guard database.hasPrefix("postgres://") || database.hasPrefix("postgresql://") else {
                throw ConfigurationError(key: "store.database", problem: "a store is sqlite, or postgres://user@host:port/database.")
            }
            // Read here, so a bad sslmode or a misspelt parameter stops the node at start.
            do {
                _ = try PostgresAddress(database)
            } catch {
                throw ConfigurationError(key: "store.database", problem: error.message)
            }
        }
        store.durability = try settings.choice("store.durability", Durability.self) ?? store.durability
        store.retention = try settings.duration("store.retention") ?? store.retention
        store.commitTimeout = try settings.timeout("store.commitTimeout") ?? store.commitTimeout
        lifecycle.maxActiveDuration = try settings.duration("lifecycle.maxActiveDuration") ?? lifecycle.maxActiveDuration
        lifecycle.dismissalWindow = try settings.duration("lifecycle.dismissalWindow") ?? lifecycle.dismissalWindow
        lifecycle.maxLifetime = try settings.duration("lifecycle.maxLifetime") ?? lifecycle.maxLifetime
        lifecycle.maxPayloadSize = try settings.int("lifecycle.maxPayloadSize", in: 2...(1 << 20)) ?? lifecycle.maxPayloadSize
        lifecycle.maxActivitiesPerApp = try settings.int("lifecycle.maxActivitiesPerApp", in: 1...1_000_000)
            ?? lifecycle.maxActivitiesPerApp
        lifecycle.maxActivitiesPerDevice = try settings.int("lifecycle.maxActivitiesPerDevice", in: 1...1_000_000)
            ?? lifecycle.maxActivitiesPerDevice
        lifecycle.maxTimestampLead = try settings.duration("lifecycle.maxTimestampLead") ?? lifecycle.maxTimestampLead
        lifecycle.maxScheduleLead = try settings.duration("lifecycle.maxScheduleLead") ?? lifecycle.maxScheduleLead
        lifecycle.pushBudgetPerHour = try settings.int("lifecycle.pushBudgetPerHour", in: 0...10_000)
            ?? lifecycle.pushBudgetPerHour
        lifecycle.frequentPushBudgetPerHour = try settings.int("lifecycle.frequentPushBudgetPerHour", in: 0...10_000)
            ?? lifecycle.frequentPushBudgetPerHour
        lifecycle.renewalLead = try settings.duration("lifecycle.renewalLead", atLeast: 1) ?? lifecycle.renewalLead
        apns.enabled = try settings.bool("apns.enabled") ?? apns.enabled
        apns.host = try settings.string("apns.host")
        apns.port = try settings.int("apns.port", in: 0...65535) ?? apns.port
        apns.certificate = try settings.string("apns.certificate")
        apns.privateKey = try settings.string("apns.privateKey")
        apns.tokenRotation = try settings.duration("apns.tokenRotation") ?? apns.tokenRotation
        apns.maxChannelsPerApp = try settings.int("apns.maxChannelsPerApp", in: 1...1_000_000) ?? apns.maxChannelsPerApp
        apns.maxConnections = try settings.int("apns.maxConnections", in: 1...1_000_000)
        apns.firstRequestTimeout = try settings.timeout("apns.firstRequestTimeout") ?? apns.firstRequestTimeout
        apns.requestTimeout = try settings.timeout("apns.requestTimeout") ?? apns.requestTimeout
        apns.idleTimeout = try settings.timeout("apns.idleTimeout") ?? apns.idleTimeout
        if let text = try settings.string("apns.faults") {
            do {
                apns.faults = try APNsFaults(parsing: text)
            } catch {
                throw ConfigurationError(key: "apns.faults", problem: "\(error); write it like 500=0.1, 503=0.05, 429=0.05, close=0.02.")
            }
        }
        apns.tokenRateLimit = try settings.int("apns.tokenRateLimit", in: 0...1_000_000) ?? apns.tokenRateLimit
        apns.providerTokenInterval = try settings.duration("apns.providerTokenInterval") ?? apns.providerTokenInterval
        if (apns.certificate == nil) != (apns.privateKey == nil) {
            throw ConfigurationError(key: "apns.certificate", problem: "set apns.certificate and apns.privateKey together.")
        }
        delivery.concurrency = try settings.int("delivery.concurrency", in: 1...10_000) ?? delivery.concurrency
        delivery.connections = try settings.int("delivery.connections", in: 1...64) ?? delivery.connections
        delivery.maximumBackoff = try settings.timeout("delivery.maxBackoff") ?? delivery.maximumBackoff
        delivery.lease = try settings.duration("delivery.lease", atLeast: 2) ?? delivery.lease
        delivery.enabled = try settings.bool("delivery.enabled") ?? delivery.enabled
        webhooks.enabled = try settings.bool("webhooks.enabled") ?? webhooks.enabled
        webhooks.allowPrivateNetworks = try settings.bool("webhooks.allowPrivateNetworks") ?? webhooks.allowPrivateNetworks
        webhooks.timeout = try settings.timeout("webhooks.timeout") ?? webhooks.timeout
        webhooks.disableAfter = try settings.duration("webhooks.disableAfter", atLeast: 60) ?? webhooks.disableAfter
        webhooks.lease = try settings.duration("webhooks.lease", atLeast: 4) ?? webhooks.lease
        // A round sends for half the lease less a request's timeout: with less, it would send nothing.
        guard webhooks.lease > 2 * webhooks.timeout else {
            throw ConfigurationError(
                key: "webhooks.lease",
                problem: "\(DurationText.text(webhooks.lease)) leaves no time to send: make it more than twice webhooks.timeout (\(DurationText.text(webhooks.timeout)))."
            )
        }
        if let text = try settings.string("webhooks.retrySchedule") {
            let waits = text.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
            guard !waits.isEmpty, waits.count <= 20, waits.allSatisfy({ $0.map { $0 >= 0 && $0 <= 7 * 86_400 } ?? false }) else {
                throw ConfigurationError(
                    key: "webhooks.retrySchedule",
                    problem: "write the waits before each attempt in seconds, comma-separated, at most 20, each at most 604800: 0, 5, 300, 1800, 7200, 18000, 36000, 36000."
                )
            }
            webhooks.retrySchedule = waits.compactMap { $0 }
        }
        if let endpoint = try settings.string("telemetry.otlpEndpoint") {
            try TelemetrySettings.check(endpoint, source: "telemetry.otlpEndpoint")
            telemetry.otlpEndpoint = endpoint
        }
        streams.bufferSize = try settings.int("streams.bufferSize", in: 16...10_000_000) ?? streams.bufferSize
        // Under a second, a keep-alive floods every stream and spins the server; a write timeout cuts every reader.
        streams.keepAliveInterval = try settings.duration("streams.keepAlive", atLeast: 1) ?? streams.keepAliveInterval
        streams.writeTimeout = try settings.duration("streams.writeTimeout", atLeast: 1) ?? streams.writeTimeout
        logLevel = try settings.choice("log.level", Logger.Level.self) ?? logLevel
    }
}

/// An invalid configuration value, named by its key.
public struct ConfigurationError: Error, CustomStringConvertible {
    /// The key, such as `server.port` (`ISLET_SERVER_PORT` in the environment).
    public var key: String
    /// What is wrong with its value.
    public var problem: String

    public var description: String { "Configuration \(key): \(problem)" }
}

/// Reads settings as text and parses them strictly, so a typo is an error, not a default.
private struct SettingsReader {
    let reader: ConfigReader

    func string(_ key: String, secret: Bool = false) throws -> String? {
        reader.string(forKey: ConfigKey(key), isSecret: secret)
    }

    /// A directory that must exist, so a typo stops the server rather than serving nothing.
    func directory(_ key: String) throws -> String? {
        guard let path = try string(key) else { return nil }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ConfigurationError(key: key, problem: "\"\(path)\" is not a directory.")
        }
        return path
    }

    func int(_ key: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let text = try string(key) else { return nil }
        guard let value = Int(text.trimmingCharacters(in: .whitespaces)), range.contains(value) else {
            throw ConfigurationError(key: key, problem: "\"\(text)\" is not a whole number from \(range.lowerBound) to \(range.upperBound).")
        }
        return value
    }

    func bool(_ key: String) throws -> Bool? {
        guard let text = try string(key) else { return nil }
        switch text.trimmingCharacters(in: .whitespaces).lowercased() {
        case "true", "yes", "on", "1": return true
        case "false", "no", "off", "0": return false
        default: throw ConfigurationError(key: key, problem: "\"\(text)\" is not true or false.")
        }
    }

    /// The longest duration any setting takes: ten years. Longer ones would overflow the
    /// timers' `Duration`s and nanosecond counts, so they are refused with the key's name.
    static let longestDuration: TimeInterval = 10 * 365 * 86_400

    func duration(_ key: String, atLeast shortest: TimeInterval = 0) throws -> TimeInterval? {
        guard let text = try string(key) else { return nil }
        guard let seconds = DurationText.seconds(text) else {
            throw ConfigurationError(key: key, problem: "\"\(text)\" is not a duration; write it like 8h, 4h30m, 15m, 90s or 90.")
        }
        guard seconds <= Self.longestDuration else {
            throw ConfigurationError(key: key, problem: "\"\(text)\" is longer than the longest duration a setting takes, 3650d.")
        }
        guard seconds >= shortest else {
            throw ConfigurationError(key: key, problem: "\"\(text)\" is shorter than this setting takes, \(DurationText.text(shortest)).")
        }
        return seconds
    }

    /// A connection timeout: more than nothing and at most a week, so it fits a `TimeAmount`.
    func timeout(_ key: String) throws -> TimeInterval? {
        guard let seconds = try duration(key) else { return nil }
        guard seconds > 0, seconds <= 7 * 86_400 else {
            throw ConfigurationError(key: key, problem: "a timeout is more than 0s and at most 7d, not \(DurationText.text(seconds)).")
        }
        return seconds
    }

    func choice<Choice: RawRepresentable & CaseIterable>(_ key: String, _ type: Choice.Type) throws -> Choice?
    where Choice.RawValue == String {
        guard let text = try string(key) else { return nil }
        guard let value = Choice(rawValue: text.trimmingCharacters(in: .whitespaces).lowercased()) else {
            let choices = Choice.allCases.map(\.rawValue).joined(separator: ", ")
            throw ConfigurationError(key: key, problem: "\"\(text)\" is not one of \(choices).")
        }
        return value
    }
}
