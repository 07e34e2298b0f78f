import Foundation
import IsletCore

extension FuzzTarget {
    /// The rules engine with any sequence of inputs, read from a script (`RulesScript`): starts,
    /// updates, ends, dismissals, pushes and time moving, with any numbers — huge, negative,
    /// NaN, infinite. `Activity.request` and `Activity.handle` must never trap, and every step
    /// must keep `LifecycleCheck`'s invariants. A refused input changes nothing, as in the store,
    /// which drops the changed value when `handle` throws.
    public static let rules = FuzzTarget(name: "rules") { data throws(FuzzFailure) in
        var run = RulesRun()
        for line in RulesScript.lines(of: data) {
            try run.perform(line)
        }
    }
}

/// The scripts the `rules` target reads: one step a line, a command and its words, such as
///
///     start at=1750000000 start=1750003600 alert stale=1750007200 state=1
///     update wait=60 ts=1750000060 state=2 alert
///     push-update wait=10 budget=12 state=3
///     end wait=5 dismiss=immediate content state=4
///
/// Commands: `start`, `update`, `end`, `dismiss` (a person's), `disable` (the app turned
/// off), `advance` (time passing), `push-update`, `push-end`. Every line may move the clock:
/// `at=` sets it (Unix seconds), `wait=` adds to it. Content: `state=` (the value of
/// `state.step`), `size=` (a string that many bytes long, for the size limit), `stale=`,
/// `relevance=`, `badstate` (a state that is not an object). Updates and ends: `ts=`; ends:
/// `content` (final content), `dismiss=default|immediate|<date>`; pushes: `budget=<n>` or
/// none; starts: `start=<date>`, `alert`, `token`, `channel`, and `full`, `devicefull` or
/// `disabled` for what the device already holds. Numbers are Swift's `Double(_:)`: `nan`, `inf`,
/// `-1e308`, `0x1p60`. Anything unknown is skipped, so every mutation means something.
enum RulesScript {
    struct Line {
        var command: Substring
        var values: [Substring: Substring] = [:]
        var flags: Set<Substring> = []

        func number(_ key: Substring) -> Double? { values[key].flatMap { Double($0) } }
        func date(_ key: Substring) -> Date? { number(key).map(Date.init(timeIntervalSince1970:)) }

        /// Every number the line carries, for `LifecycleCheck.observe`.
        var numbers: [Double] { values.values.compactMap { Double($0) } }
    }

    /// At most this many steps are run, so one input stays fast.
    static let maximumSteps = 200

    static func lines(of data: Data) -> [Line] {
        let text = String(decoding: data, as: UTF8.self)
        return text.split(whereSeparator: \.isNewline).prefix(maximumSteps).compactMap { line -> Line? in
            let words = line.split(separator: " ")
            guard let command = words.first, !command.hasPrefix("#") else { return nil }
            var parsed = Line(command: command)
            for word in words.dropFirst() {
                if let equals = word.firstIndex(of: "=") {
                    parsed.values[word[..<equals]] = word[word.index(after: equals)...]
                } else {
                    parsed.flags.insert(word)
                }
            }
            return parsed
        }
    }
}

/// One script's run: the clock, the activity and the checks.
struct RulesRun {
    let rules = LifecycleRules()
    var now = Date(timeIntervalSince1970: 1_750_000_000)
    var activity: Activity?
    var check: LifecycleCheck
    private var started = 0

    init() {
        check = LifecycleCheck(rules: rules)
    }

    /// Starts an activity from a request, as `POST /v1/activities` does.
    mutating func start(_ request: ActivityRequest) throws(FuzzFailure) {
        try start(request, occupancy: Occupancy(activitiesEnabled: true, appActivities: 0, deviceActivities: 0), now: now)
    }

    /// Applies an input to the activity (one started an hour before, if there is none).
    mutating func apply(_ input: Activity.Input) throws(FuzzFailure) {
        check.observe(now: now, numbers: [])
        if activity == nil {
            try start(RulesScript.Line(command: "start", values: ["state": "0"]), now: now.addingTimeInterval(-3600))
        }
        guard let before = activity else { return }
        var after = before
        let transition: Transition
        do throws(IsletError) {
            transition = try after.handle(input, now: now, rules: rules)
        } catch {
            try expect(!error.message.isEmpty, "\(input) was refused with \(error.reason.rawValue) and no message")
            return
        }
        try check.handled(input, before: before, after: after, transition: transition, now: now)
        activity = after
    }

    mutating func perform(_ line: RulesScript.Line) throws(FuzzFailure) {
        if let at = line.date("at") { now = at }
        if let wait = line.number("wait") { now = now.addingTimeInterval(wait) }
        check.observe(now: now, numbers: line.numbers)
        if line.command == "start" {
            try start(line, now: now)
            return
        }
        // A script that starts with anything else acts on an activity started an hour before.
        guard let input = input(for: line) else { return }
        try apply(input)
    }

    private mutating func start(_ line: RulesScript.Line, now: Date) throws(FuzzFailure) {
        let request = ActivityRequest(
            attributesType: "FuzzAttributes", attributes: ["order": "42"], content: content(line),
            pushType: line.flags.contains("token") ? .token : line.flags.contains("channel") ? .channel("AAAAAAAAAAAAAAAAAAAAAA==") : nil,
            alert: alert(line), start: line.date("start")
        )
        let occupancy = Occupancy(
            activitiesEnabled: !line.flags.contains("disabled"),
            appActivities: line.flags.contains("full") ? rules.maxActivitiesPerApp : 0,
            deviceActivities: line.flags.contains("devicefull") ? rules.maxActivitiesPerDevice : 1
        )
        try start(request, occupancy: occupancy, now: now)
    }

    private mutating func start(_ request: ActivityRequest, occupancy: Occupancy, now: Date) throws(FuzzFailure) {
        started += 1
        let activity: Activity
        let transition: Transition
        do throws(IsletError) {
            (activity, transition) = try Activity.request(
                request, id: "fuzz-\(started)", bundleId: "com.example.fuzz", pushToken: String(repeating: "ab", count: 32),
                occupancy: occupancy, now: now, rules: rules
            )
        } catch {
            try expect(!error.message.isEmpty, "a start was refused with \(error.reason.rawValue) and no message")
            return
        }
        try check.started(activity, transition, request: request, now: now)
        self.activity = activity
    }

    private func input(for line: RulesScript.Line) -> Activity.Input? {
        let budget = line.values["budget"] == "none" ? nil : Int(line.values["budget"] ?? "") ?? rules.pushBudgetPerHour
        switch line.command {
        case "update":
            return .update(ContentUpdate(content: content(line), alert: alert(line), timestamp: line.date("ts")))
        case "end":
            return .end(end(line))
        case "dismiss":
            return .userDismissal
        case "disable":
            return .appDisabled
        case "advance":
            return .advance
        case "push-update":
            let update = ContentUpdate(content: content(line), alert: alert(line), timestamp: line.date("ts"))
            return .push(.update(update), Activity.PushDelivery(budgetPerHour: budget))
        case "push-end":
            return .push(.end(end(line)), Activity.PushDelivery(budgetPerHour: budget))
        default:
            return nil
        }
    }

    private func end(_ line: RulesScript.Line) -> EndRequest {
        let policy: DismissalPolicy =
            switch line.values["dismiss"] {
            case "immediate": .immediate
            case let value?: Double(value).map { .after(Date(timeIntervalSince1970: $0)) } ?? .default
            case nil: .default
            }
        return EndRequest(content: line.flags.contains("content") ? content(line) : nil, dismissalPolicy: policy, timestamp: line.date("ts"))
    }

    private func content(_ line: RulesScript.Line) -> ActivityContent {
        var state: [String: JSONValue] = [:]
        if let step = line.values["state"] {
            state["step"] = Int64(step).map(JSONValue.integer) ?? Double(step).map(JSONValue.number) ?? .string(String(step))
        }
        if let size = line.number("size"), size.isFinite, size > 0 {
            state["pad"] = .string(String(repeating: "x", count: Int(min(size, 10_000))))
        }
        return ActivityContent(
            state: line.flags.contains("badstate") ? .array([]) : .object(state), staleDate: line.date("stale"),
            relevanceScore: line.number("relevance") ?? 0
        )
    }

    private func alert(_ line: RulesScript.Line) -> Alert? {
        line.flags.contains("alert") ? Alert(title: "Fuzz", body: "Step \(line.values["state"] ?? "")", sound: "default") : nil
    }
}
