import ArgumentParser
import Foundation
import IsletClient
import IsletCore

/// `islet start`: request an activity.
struct Start: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start an activity.",
        discussion: """
            With --by-key, starts the activity or, if one is live under that key, updates it (one
            call per step of a pipeline); add --end to end it with that content.
            """
    )

    @Argument(help: "The attributes type, like an ActivityAttributes type's name.")
    var attributesType: String

    @Option(help: "The app (needed with the admin key; env ISLET_APP).")
    var app: String?

    @Option(help: "The static attributes as JSON (inline, @file or -).")
    var attributes = "{}"

    @OptionGroup var content: ContentOptions
    @OptionGroup var alert: AlertOptions

    @Option(help: "The device to show it on (default: default).")
    var device: String?

    @Flag(help: "Give the activity a push token.")
    var pushToken = false

    @Flag(help: "A transient activity (expanded Dynamic Island only).")
    var transient = false

    @Option(help: "Start later: pending until this long from now (needs an alert).")
    var startIn: String?

    @Option(help: "Start or update under this stable key (a CI job id).")
    var byKey: String?

    @Flag(help: "With --by-key: end the activity after applying the content.")
    var end = false

    @Option(help: "With --end: default, immediate, a duration (30m) or at:<Unix time>.")
    var dismiss: String?

    @Flag(name: .shortAndLong, help: "Print only the activity's id.")
    var quiet = false

    @OptionGroup var options: ClientOptions

    func validate() throws {
        if content.state == nil { throw ValidationError("Give the content state with --state '{…}'.") }
        if end && byKey == nil { throw ValidationError("--end works with --by-key; to end an activity, use islet end.") }
        if dismiss != nil && !end { throw ValidationError("--dismiss needs --end.") }
    }

    func run() async throws {
        guard let initial = try content.content() else { return }
        let request = ActivityRequest(
            attributesType: attributesType, attributes: try parseJSON(attributes, option: "--attributes"),
            content: initial, pushType: pushToken ? .token : nil, style: transient ? .transient : .standard,
            alert: try alert.alert(), start: try startIn.map { Date().addingTimeInterval(try parseDuration($0, option: "--start-in")) },
            deviceId: device ?? .defaultDevice
        )
        let bundleId = app ?? options.environment["ISLET_APP"]
        let ending = try end ? parseDismissal(dismiss ?? "default") : nil
        let activity = try await options.run { client in
            if let byKey {
                try await client.startOrUpdate(key: byKey, request, bundleId: bundleId, end: ending)
            } else {
                try await client.start(request, bundleId: bundleId)
            }
        }
        quiet ? print(activity.id) : Output(json: options.json).activity(activity)
    }
}

/// `islet update`: new content for an activity.
struct Update: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Update an activity's content.")

    @Argument(help: "The activity's id.")
    var id: String

    @OptionGroup var content: ContentOptions
    @OptionGroup var alert: AlertOptions

    @Option(help: "The update's Unix timestamp; older than the last applied update means ignored.")
    var timestamp: Double?

    @Flag(name: .shortAndLong, help: "Print nothing on success.")
    var quiet = false

    @OptionGroup var options: ClientOptions

    func validate() throws {
        if content.state == nil { throw ValidationError("Give the new content state with --state '{…}'.") }
    }

    func run() async throws {
        guard let newContent = try content.content() else { return }
        let update = ContentUpdate(
            content: newContent, alert: try alert.alert(), timestamp: timestamp.map(Date.init(timeIntervalSince1970:))
        )
        let activity = try await options.run { try await $0.update(id, update) }
        if !quiet { Output(json: options.json).activity(activity) }
    }
}

/// `islet end`: end an activity.
struct End: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "End an activity.")

    @Argument(help: "The activity's id.")
    var id: String

    @OptionGroup var content: ContentOptions

    @Option(help: "When it leaves the Lock Screen: default (up to 4h), immediate, a duration (30m) or at:<Unix time>.")
    var dismiss = "default"

    @Option(help: "The end's Unix timestamp.")
    var timestamp: Double?

    @Flag(name: .shortAndLong, help: "Print nothing on success.")
    var quiet = false

    @OptionGroup var options: ClientOptions

    func run() async throws {
        let end = EndRequest(
            content: try content.content(), dismissalPolicy: try parseDismissal(dismiss),
            timestamp: timestamp.map(Date.init(timeIntervalSince1970:))
        )
        let activity = try await options.run { try await $0.end(id, end) }
        if !quiet { Output(json: options.json).activity(activity) }
    }
}

/// `islet dismiss`: remove an activity as a person would from the Lock Screen.
struct Dismiss: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Dismiss an activity, as a person would (admin key).")

    @Argument(help: "The activity's id.")
    var id: String

    @OptionGroup var options: ClientOptions

    func run() async throws {
        let activity = try await options.run { try await $0.dismiss(id) }
        Output(json: options.json).activity(activity)
    }
}

/// `islet get`: one activity.
struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show one activity.")

    @Argument(help: "The activity's id.")
    var id: String

    @OptionGroup var options: ClientOptions

    func run() async throws {
        let activity = try await options.run { try await $0.activity(id) }
        Output(json: options.json).activity(activity)
    }
}

/// `islet list`: activities in the order a device shows them.
struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List activities, most relevant first.")

    @Option(help: "Only this app's.")
    var app: String?

    @Option(help: "Only this device's.")
    var device: String?

    @Option(help: "Only these states, comma-separated (pending,active,stale,ended,dismissed).")
    var state: String?

    @Option(help: "Only this attributes type.")
    var type: String?

    @Option(help: "At most this many (1–1000).")
    var limit = 100

    @OptionGroup var options: ClientOptions

    func run() async throws {
        var filter = ActivityFilter(bundleId: app, deviceId: device, attributesType: type, limit: limit)
        if let state {
            filter.states = Set(try state.split(separator: ",").map { name in
                guard let value = ActivityState(rawValue: String(name)) else {
                    throw ValidationError("Unknown state \(name): use pending, active, stale, ended or dismissed.")
                }
                return value
            })
        }
        let activities = try await options.run { try await $0.activities(filter) }
        Output(json: options.json).activities(activities)
    }
}

/// `islet history`: everything that happened to an activity.
struct History: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show an activity's history, with the reason for every ignored update."
    )

    @Argument(help: "The activity's id.")
    var id: String

    @OptionGroup var options: ClientOptions

    func run() async throws {
        let events = try await options.run { try await $0.history(id) }
        Output(json: options.json).events(events)
    }
}
