import ArgumentParser
import Foundation
import IsletClient
import IsletCore

/// `islet start`: request an activity.
struct Start: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start an activity.",
        discussion: """
            With --by-key, starts the activity or, if one is live under that key, updates it (one \
            call per step of a pipeline); add --end to end it with that content. With --renew it \
            outlasts the 8-hour limit: Islet renews it before then, and its id keeps working \
            (docs/renewal.md; islet status <id> says how it stands).
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

    @Option(help: "Join this broadcast channel (islet channels): its broadcasts update the activity.")
    var channel: String?

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

    @Flag(help: "Renew it before its maximum active duration runs out, so it outlasts 8 hours.")
    var renew = false

    @Option(help: "With --renew: stop renewing this long from now (like 3d or 36h).")
    var renewFor: String?

    @Flag(name: .shortAndLong, help: "Print only the activity's id.")
    var quiet = false

    @OptionGroup var options: ClientOptions

    func validate() throws {
        if content.state == nil { throw ValidationError("Give the content state with --state '{…}'.") }
        if end && byKey == nil { throw ValidationError("--end works with --by-key; to end an activity, use islet end.") }
        if dismiss != nil && !end { throw ValidationError("--dismiss needs --end.") }
        if pushToken && channel != nil { throw ValidationError("An activity has a push token or a channel, not both.") }
        if renewFor != nil && !renew { throw ValidationError("--renew-for needs --renew.") }
    }

    func run() async throws {
        guard let initial = try content.content() else { return }
        let request = ActivityRequest(
            attributesType: attributesType, attributes: try parseJSON(attributes, option: "--attributes"),
            content: initial, pushType: channel.map { .channel($0) } ?? (pushToken ? .token : nil), style: transient ? .transient : .standard,
            alert: try alert.alert(), start: try startIn.map { Date().addingTimeInterval(try parseDuration($0, option: "--start-in")) },
            deviceId: device ?? .defaultDevice, renew: renew,
            renewUntil: try renewFor.map { Date().addingTimeInterval(try parseDuration($0, option: "--renew-for")) }
        )
        let bundleId = ClientOptions.app(app)
        let ending = try end ? parseDismissal(dismiss ?? "default") : nil
        let answer = try await options.run { client in
            if let byKey {
                try await client.startOrUpdateWarned(key: byKey, request, bundleId: bundleId, end: ending)
            } else {
                try await client.startWarned(request, bundleId: bundleId)
            }
        }
        for warning in answer.warnings { Terminal.error("warning: \(warning)") }
        quiet ? print(answer.value.id) : Output(json: options.json).activity(answer.value)
    }
}
