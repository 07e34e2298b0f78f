import ArgumentParser
import Foundation
import IsletClient
import IsletCore

/// `islet send`: start, update or end an activity on every phone of an audience — the phones of
/// users named or carrying tags, devices named, or all — now or at a time (docs/audiences.md).
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Start, update or end an activity on every phone of an audience, now or at a time.",
        discussion: """
            islet send start MatchAttributes --by-key match-123 --tags match=123 --at 19:45 --end-at 21:50 \
            --state '{"score":"0-0"}' starts the match card for everyone who follows match 123 at \
            kick-off and ends it at full time; islet send update --by-key match-123 --tags match=123 \
            --state '{"score":"1-0"}' updates it on the same phones. The answer comes at once; \
            islet sends get <id> says how far it has got. Times: 19:45 (today, here), an ISO 8601 \
            date, Unix seconds, or +10m from now.
            """
    )

    @Argument(help: "start, update or end.")
    var action: SendAction

    @Argument(help: "A start's attributes type (like an ActivityAttributes type's name).")
    var attributesType: String?

    @Option(help: "Each phone's activity is the app's activity with this key on that phone (a start makes one up when left out; an update or end names it).")
    var byKey: String?

    @Option(help: "The phones of the users with all these tags: name=value, comma-separated.")
    var tags: String?

    @Option(help: "The phones of these users (the app's ids), comma-separated.")
    var users: String?

    @Option(help: "These devices, comma-separated.")
    var devices: String?

    @Flag(help: "Every phone of the app's users.")
    var all = false

    @Option(help: "When to do it (default: now).")
    var at: String?

    @Option(help: "A start's end: the phones it started end then.")
    var endAt: String?

    @Option(help: "A start's dismissal: the ended activities leave then.")
    var dismissAt: String?

    @Option(help: "A start's static attributes as JSON (inline, @file or -).")
    var attributes = "{}"

    @OptionGroup var content: ContentOptions
    @OptionGroup var alert: AlertOptions

    @Option(help: "An end's dismissal: default, immediate, a duration (30m) or at:<Unix time>.")
    var dismiss: String?

    @Flag(help: "A start gives each activity a push token.")
    var pushToken = false

    @Flag(name: .shortAndLong, help: "Print only the send's id.")
    var quiet = false

    @OptionGroup var app: AppOption
    @OptionGroup var options: ClientOptions

    func validate() throws {
        let audiences = [tags != nil, users != nil, devices != nil, all].filter { $0 }.count
        guard audiences == 1 else { throw ValidationError("Name one audience: --tags, --users, --devices or --all.") }
        if action == .start, attributesType == nil { throw ValidationError("A start names its attributes type: islet send start MatchAttributes ….") }
        if action != .start, attributesType != nil { throw ValidationError("Only a start names an attributes type.") }
        if action != .start, endAt != nil || dismissAt != nil || pushToken { throw ValidationError("--end-at, --dismiss-at and --push-token are a start's.") }
        if action != .end, dismiss != nil { throw ValidationError("--dismiss is an end's.") }
        if action != .start, byKey == nil { throw ValidationError("An \(action.rawValue) names the activities' key: --by-key (the start's).") }
    }

    func run() async throws {
        let now = Date()
        let body = SendBody(
            action: action, key: byKey ?? "send-" + UUID().uuidString.prefix(8).lowercased(), audience: try audience(), at: try at.map { try parseMoment($0, option: "--at", now: now) },
            attributesType: attributesType, attributes: action == .start ? try parseJSON(attributes, option: "--attributes") : nil,
            content: try content.content(), alert: try alert.alert(), pushType: pushToken ? .token : nil,
            dismissalPolicy: try dismiss.map(parseDismissal), endAt: try endAt.map { try parseMoment($0, option: "--end-at", now: now) },
            dismissAt: try dismissAt.map { try parseMoment($0, option: "--dismiss-at", now: now) }
        )
        let send = try await options.run { client in try await client.createSend(bundleId: try await app.bundleId(client), body) }
        if quiet { return print(send.id) }
        Sends.show(send, json: options.json)
        if !options.json, let followUp = send.followUp { Terminal.line("Its end: send \(followUp).") }
    }

    private func audience() throws -> Audience {
        if let tags {
            var parsed: [String: String] = [:]
            for pair in Sends.list(tags) {
                guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
                    throw ValidationError("--tags: name=value pairs, comma-separated (match=123,team=ajax).")
                }
                parsed[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
            }
            return .tags(parsed)
        }
        if let users { return .users(Sends.list(users)) }
        if let devices { return .devices(Sends.list(devices)) }
        return .all
    }
}

/// `islet sends`: an app's sends — listed, one read, cancelled, moved, its phones.
struct Sends: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "An app's sends: list, get, cancel, move, targets.",
        subcommands: [ListSends.self, GetSend.self, CancelSend.self, MoveSend.self, SendTargets.self],
        defaultSubcommand: ListSends.self
    )

    /// A send in words: what, to whom, when, how far.
    static func describe(_ send: Send) -> String {
        let counts = send.counts
        let when: String =
            switch send.status {
            case .scheduled: "scheduled for \(send.body.at.map(Output.time) ?? "now")"
            case .running: "running"
            case .done: "done"
            case .cancelled: "cancelled"
            }
        var text = "\(send.body.action.rawValue) \(send.body.key) on \(audience(send.body.audience)), \(when)"
        if counts.targeted > 0 {
            text += "; \(counts.targeted) phones: \(counts.started) started, \(counts.updated) updated, \(counts.ended) ended,"
                + " \(counts.skipped) skipped, \(counts.failed) failed"
        }
        return text
    }

    /// A send as the commands print it: a sentence, or its JSON with `--json`.
    static func show(_ send: Send, json: Bool) {
        json ? Output(json: true).encoded(send) : Terminal.line("Send \(send.id): \(describe(send)).")
    }

    static func audience(_ audience: Audience) -> String {
        switch audience {
        case .all: "every user's phones"
        case .users(let ids): "the phones of \(ids.count) user\(ids.count == 1 ? "" : "s")"
        case .tags(let tags): "the phones of users with " + tags.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")
        case .devices(let ids): "\(ids.count) device\(ids.count == 1 ? "" : "s")"
        case .startedBy(let id): "the phones send \(id) started"
        case .activity(let id): "activity \(id)"
        }
    }

    static func list(_ text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    struct ListSends: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List an app's sends, oldest first.")

        @OptionGroup var app: AppOption
        @OptionGroup var options: ClientOptions

        func run() async throws {
            let sends = try await options.run { client in try await client.sends(bundleId: try await app.bundleId(client)) }
            let output = Output(json: options.json)
            if options.json { return output.encoded(["sends": sends]) }
            if sends.isEmpty { return Terminal.line("No sends.") }
            output.table(
                ["ID", "ACTION", "KEY", "STATUS", "AT", "TARGETED", "DONE"],
                sends.map { send in
                    [
                        send.id, send.body.action.rawValue, send.body.key, send.status.rawValue, send.body.at.map(Output.time) ?? "-",
                        String(send.counts.targeted), String(send.counts.done),
                    ]
                }
            )
        }
    }

    struct GetSend: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "get", abstract: "A send and how far it has got.")

        @Argument(help: "The send's id (snd_…).")
        var id: String

        @OptionGroup var app: AppOption
        @OptionGroup var options: ClientOptions

        func run() async throws {
            let send = try await options.run { client in try await client.send(bundleId: try await app.bundleId(client), id: id) }
            Sends.show(send, json: options.json)
        }
    }

    struct CancelSend: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "cancel", abstract: "Cancel a send (a running one stops after its current batch)."
        )

        @Argument(help: "The send's id (snd_…).")
        var id: String

        @OptionGroup var app: AppOption
        @OptionGroup var options: ClientOptions

        func run() async throws {
            let send = try await options.run { client in try await client.cancelSend(bundleId: try await app.bundleId(client), id: id) }
            Sends.show(send, json: options.json)
        }
    }

    struct MoveSend: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "move", abstract: "Move a scheduled send to another time.")

        @Argument(help: "The send's id (snd_…).")
        var id: String

        @Option(help: "The new time: 19:45 (today, here), an ISO 8601 date, Unix seconds, or +10m.")
        var at: String

        @OptionGroup var app: AppOption
        @OptionGroup var options: ClientOptions

        func run() async throws {
            let moment = try parseMoment(at, option: "--at", now: Date())
            let send = try await options.run { client in try await client.moveSend(bundleId: try await app.bundleId(client), id: id, to: moment) }
            Sends.show(send, json: options.json)
        }
    }

    struct SendTargets: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "targets", abstract: "A send's phones and what it did on each.")

        @Argument(help: "The send's id (snd_…).")
        var id: String

        @Option(help: "Only these: started, updated, ended, skipped or failed.")
        var outcome: SendTargetOutcome?

        @OptionGroup var app: AppOption
        @OptionGroup var options: ClientOptions

        func run() async throws {
            let targets = try await options.run { client in
                try await client.sendTargets(bundleId: try await app.bundleId(client), id: id, outcome: outcome)
            }
            let output = Output(json: options.json)
            if options.json { return output.encoded(["targets": targets]) }
            if targets.isEmpty { return Terminal.line("No phones.") }
            output.table(
                ["DEVICE", "OUTCOME", "ACTIVITY", "WHY"],
                targets.map { [$0.deviceId, $0.outcome?.rawValue ?? "waiting", $0.activityId ?? "-", $0.reason ?? ""] }
            )
        }
    }
}

extension SendAction: ExpressibleByArgument {}
extension SendTargetOutcome: ExpressibleByArgument {}

/// Reads a moment: `19:45` or `19:45:30` (today, in this machine's time zone; refused once
/// past), an ISO 8601 date, Unix seconds, or `+10m` from now.
func parseMoment(_ text: String, option: String, now: Date) throws -> Date {
    if let seconds = Double(text), seconds.isFinite, WireFormat.isAcceptedDate(seconds) { return Date(timeIntervalSince1970: seconds) }
    if text.hasPrefix("+"), let seconds = DurationText.seconds(String(text.dropFirst())) { return now.addingTimeInterval(seconds) }
    let clock = text.split(separator: ":")
    if (2...3).contains(clock.count), clock.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isNumber) }) {
        let parts = clock.compactMap { Int($0) }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .current
        guard parts[0] < 24, parts[1] < 60, parts.count < 3 || parts[2] < 60,
            let moment = calendar.date(bySettingHour: parts[0], minute: parts[1], second: parts.count == 3 ? parts[2] : 0, of: now)
        else { throw ValidationError("\(option): \(text) is not a time of day.") }
        guard moment > now else {
            let tomorrow = ISO8601DateFormatter()
            tomorrow.timeZone = .current
            throw ValidationError("\(option): \(text) today has passed; give a date, such as \(tomorrow.string(from: moment.addingTimeInterval(86_400))).")
        }
        return moment
    }
    let formatter = ISO8601DateFormatter()
    if let date = formatter.date(from: text) { return date }
    formatter.formatOptions.insert(.withFractionalSeconds)
    if let date = formatter.date(from: text) { return date }
    throw ValidationError("\(option): 19:45 (today, here), an ISO 8601 date (2026-11-29T19:45:00Z), Unix seconds, or +10m.")
}
